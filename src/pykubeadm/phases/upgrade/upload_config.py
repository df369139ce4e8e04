"""upgrade phase `upload-config` (`kubeadm`, `kubelet`): store the upgraded ClusterConfiguration (its new
kubernetesVersion) in kubeadm-config and upload the kubelet component config again, keeping the user's settings."""

from __future__ import annotations

from pykubeadm import constants as c
from pykubeadm.api import dump_cluster_configuration
from pykubeadm.phases.upgrade.cluster import get_configmap
from pykubeadm.phases.upgrade.data import UpgradeData
from pykubeadm.phases.uploadconfig import component_config_hash, kubeadm_config_objects, kubelet_config_objects
from pykubeadm.workflow import Phase, all_phase

__all__ = ["PHASE", "kubelet_config_text"]

_FLAGS = ("config", "dry-run", "kubeconfig")


def kubelet_config_text(data: UpgradeData) -> tuple[str, bool]:
    """The kubelet-config ConfigMap's KubeletConfiguration and whether kubeadm generated it (hash annotation intact)."""
    cached = data.state.get("kubelet_config")
    if cached is None:
        cm = get_configmap(data.client, c.KUBELET_BASE_CONFIGMAP)
        cm_data = dict(cm.data or {})
        text = cm_data.get(c.KUBELET_BASE_CONFIGMAP_KEY, "")
        ann = (cm.metadata.annotations or {}) if cm.metadata else {}
        generated = ann.get(c.ANNOTATION_COMPONENT_CONFIG_HASH) == component_config_hash(cm_data)
        cached = (text, generated)
        data.state["kubelet_config"] = cached
    return cached


def _run_kubeadm(data: UpgradeData) -> None:
    data.out(
        '[upload-config] Storing the configuration used in ConfigMap "kubeadm-config" in the "kube-system" Namespace'
    )
    data.apply(kubeadm_config_objects(dump_cluster_configuration(data.cluster)))


def _run_kubelet(data: UpgradeData) -> None:
    data.out(
        '[kubelet] Creating a ConfigMap "kubelet-config" in namespace kube-system with the configuration for the '
        "kubelets in the cluster"
    )
    text, generated = kubelet_config_text(data)
    data.apply(kubelet_config_objects(text, generated=generated))


PHASE: Phase[UpgradeData] = Phase(
    name="upload-config",
    short="Upload the kubeadm and kubelet configurations to ConfigMaps",
    children=(
        all_phase("Upload all the configurations to ConfigMaps", _FLAGS),
        Phase(
            "kubeadm", "Upload the kubeadm ClusterConfiguration to a ConfigMap", run=_run_kubeadm, inherit_flags=_FLAGS
        ),
        Phase("kubelet", "Upload the kubelet configuration to a ConfigMap", run=_run_kubelet, inherit_flags=_FLAGS),
    ),
)
