"""How the kubernetes plugin reaches the API server: a `kubeconfig` directive, else the Pod's in-cluster credentials.

In-cluster is what client-go's rest.InClusterConfig reads: $KUBERNETES_SERVICE_HOST / $KUBERNETES_SERVICE_PORT and
the service-account token, ca.crt and namespace in /var/run/secrets/kubernetes.io/serviceaccount. When that
directory is absent (the built-in kubelet ran the Pod without a mount namespace, so container paths are not
bind-mounted), the Pod's projected service-account volume is found the way the kubelet maps any container path:
under the Pod's directory, next to the ConfigMap volume the Corefile (`-conf`, already mapped) was read from.
The token file is re-read on every request (lightkube's token_file), so the kubelet's token rotation is followed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from lightkube import KubeConfig
from lightkube.config.kubeconfig import Cluster, User
from lightkube.core.exceptions import ConfigError

from pykubeadm import constants as c
from pykubeadm.client import load_kubeconfig
from pykubeadm.errors import KubeconfigError

__all__ = ["SERVICE_ACCOUNT_DIR", "find_service_account_dir", "kube_config"]

SERVICE_ACCOUNT_DIR = c.SERVICE_ACCOUNT_MOUNT_PATH
#: The kubelet's directory for projected volumes under `<pod dir>/volumes/` (kubelet.volumes.PLUGIN_DIRS).
_PROJECTED = "kubernetes.io~projected"


def find_service_account_dir(corefile_path: str) -> Path | None:
    """The in-cluster credentials directory: the standard mount, else the Pod's projected service-account volume
    found beside the (mapped) Corefile's volume directory `<pod dir>/volumes/<plugin>/<name>/…`."""
    standard = Path(SERVICE_ACCOUNT_DIR)
    if (standard / "token").is_file():
        return standard
    path = Path(corefile_path).absolute()
    for parent in path.parents:
        if parent.name == "volumes":
            for candidate in sorted((parent / _PROJECTED).glob("*")):
                if all((candidate / f).is_file() for f in ("token", "ca.crt", "namespace")):
                    return candidate
            break
    return None


def kube_config(
    *,
    kubeconfig: str | None,
    context: str | None,
    endpoint: str | None,
    corefile_path: str,
    env: Mapping[str, str],
) -> KubeConfig:
    """The API server connection; ValueError with CoreDNS's wording when there is none."""
    if kubeconfig:
        try:
            cfg = load_kubeconfig(kubeconfig)
        except KubeconfigError as err:
            raise ValueError(str(err)) from err
        if context:
            if context not in cfg.contexts:
                raise ValueError(f'context "{context}" does not exist in {kubeconfig}')
            cfg.current_context = context
    else:
        host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
        sa_dir = find_service_account_dir(corefile_path)
        if endpoint and not (host and port and sa_dir):
            return KubeConfig.from_one(cluster=Cluster(server=endpoint), user=User())
        if not host or not port:
            raise ValueError(
                "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                "must be defined"
            )
        if sa_dir is None:
            raise ValueError(f"open {SERVICE_ACCOUNT_DIR}/token: no such file or directory")
        # as KubeConfig.from_service_account, but with the environment and directory we were given
        try:
            cfg = _from_service_account(sa_dir, host, port)
        except (ConfigError, OSError) as err:
            raise ValueError(str(err)) from err
    if endpoint:  # `endpoint URL` overrides the server of the credentials found
        context_name = cfg.current_context or next(iter(cfg.contexts), None)
        if context_name in cfg.contexts:
            cfg.clusters[cfg.contexts[context_name].cluster].server = endpoint
    return cfg


def _from_service_account(sa_dir: Path, host: str, port: str) -> KubeConfig:
    if ":" in host:
        host = f"[{host}]"
    namespace = (sa_dir / "namespace").read_text().strip()
    return KubeConfig.from_one(
        cluster=Cluster(server=f"https://{host}:{port}", certificate_auth=str(sa_dir / "ca.crt")),
        user=User(token=(sa_dir / "token").read_text().strip(), token_file=str(sa_dir / "token")),
        namespace=namespace,
    )
