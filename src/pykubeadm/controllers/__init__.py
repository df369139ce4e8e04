"""The built-in kube-controller-manager (`pykubeadm component kube-controller-manager`, see `cli.py`).

runtime.py (work queue, shared informers, worker loop, PermanentError/TemporaryError), manager.py (--controllers,
running them), one module per controller (csrapproving, csrsigning, csrcleaner, bootstrapsigner, tokencleaner,
rootcacertpublisher, serviceaccount, nodeipam, nodelifecycle), csrutil.py / authority.py (CSR profiles, signing),
credentials.py (--use-service-account-credentials), serving.py (HTTPS health), flags.py (Go-style flag types).
Controllers reach the API only through `pykubeadm.client`.
"""

__all__: list[str] = []
