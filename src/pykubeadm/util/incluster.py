"""A Pod's in-cluster API credentials, as client-go's rest.InClusterConfig finds them: the API's address from
$KUBERNETES_SERVICE_HOST / $KUBERNETES_SERVICE_PORT, and the service-account token, ca.crt and namespace in
/var/run/secrets/kubernetes.io/serviceaccount.

When that directory is absent (the built-in kubelet ran the Pod without a mount namespace, so container paths are not
bind-mounted), the Pod's projected service-account volume is found the way the kubelet maps any container path: under
the Pod's directory, next to the volume of a file the program was given (CoreDNS's Corefile, metrics-server's
--cert-dir). No client library is imported here: CoreDNS's plugin builds a lightkube config from it, the metrics
server its small aiohttp client's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pykubeadm import constants as c

__all__ = ["SERVICE_ACCOUNT_DIR", "find_service_account_dir", "in_cluster_server"]

SERVICE_ACCOUNT_DIR = c.SERVICE_ACCOUNT_MOUNT_PATH
#: The kubelet's directory for projected volumes under `<pod dir>/volumes/` (kubelet.volumes.PLUGIN_DIRS).
_PROJECTED = "kubernetes.io~projected"


def find_service_account_dir(beside: str) -> Path | None:
    """The in-cluster credentials directory: the standard mount, else the Pod's projected service-account volume
    found beside the (mapped) volume directory `<pod dir>/volumes/<plugin>/<name>/…` of the file `beside`."""
    standard = Path(SERVICE_ACCOUNT_DIR)
    if (standard / "token").is_file():
        return standard
    path = Path(beside).absolute()
    for parent in path.parents:
        if parent.name == "volumes":
            for candidate in sorted((parent / _PROJECTED).glob("*")):
                if all((candidate / f).is_file() for f in ("token", "ca.crt", "namespace")):
                    return candidate
            break
    return None


def in_cluster_server(env: Mapping[str, str], sa_dir: Path | None) -> tuple[str, Path]:
    """The API's https URL from the Pod's environment and the service-account directory `sa_dir`
    (find_service_account_dir); ValueError with client-go's wording when either is missing."""
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise ValueError(
            "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
            "defined"
        )
    if sa_dir is None:
        raise ValueError(f"open {SERVICE_ACCOUNT_DIR}/token: no such file or directory")
    return (f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"), sa_dir
