"""Reading kubeadm's ClusterConfiguration back from the cluster (kube-system/kubeadm-config), as `join`, `reset`,
`upgrade` and the `certs` commands do: kubeadm's two "Reading configuration" lines, and the parse with its errors.
How the ConfigMap is fetched (which credentials, which retries) stays with each command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pykubeadm import constants as c
from pykubeadm.api import ClusterConfiguration
from pykubeadm.api.loader import load_documents
from pykubeadm.errors import KubeadmError

__all__ = ["announce_config_read", "cluster_configuration_of"]


def announce_config_read(out: Callable[[str], None], prefix: str) -> None:
    """kubeadm's lines before it reads kubeadm-config (`[preflight]`, `[reset]`, `[upgrade/config]`, ...)."""
    out(
        f'{prefix} Reading configuration from the "{c.KUBEADM_CONFIG_CONFIGMAP}" ConfigMap in namespace "kube-system"...'
    )
    out(f"{prefix} Use 'kubeadm init phase upload-config --config your-config-file' to re-upload it.")


def cluster_configuration_of(data: Mapping[str, str] | None) -> ClusterConfiguration:
    """The ClusterConfiguration in a kubeadm-config ConfigMap's data; KubeadmError with kubeadm's message if absent."""
    text = (data or {}).get(c.CLUSTER_CONFIGURATION_CONFIGMAP_KEY)
    if not text:
        raise KubeadmError(
            f"unexpected error when reading {c.KUBEADM_CONFIG_CONFIGMAP} ConfigMap: "
            f"{c.CLUSTER_CONFIGURATION_CONFIGMAP_KEY} key value pair missing"
        )
    cluster = load_documents(text).kinds.get("ClusterConfiguration")
    if not isinstance(cluster, ClusterConfiguration):
        raise KubeadmError(f"the {c.KUBEADM_CONFIG_CONFIGMAP} ConfigMap holds no ClusterConfiguration")
    return cluster
