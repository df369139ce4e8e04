"""init phase `upload-config`: the kubeadm-config and kubelet-config ConfigMaps with their Roles (§7.4, §7.5)."""

from __future__ import annotations

from pykubeadm.api import dump_cluster_configuration
from pykubeadm.api.yamlio import dump_yaml
from pykubeadm.phases.init.cluster import apply
from pykubeadm.phases.init.data import InitData
from pykubeadm.phases.uploadconfig import kubeadm_config_objects, kubelet_config_objects
from pykubeadm.workflow import Phase, all_phase

__all__ = ["PHASE"]

_FLAGS = ("config", "kubeconfig", "dry-run")


def run_kubeadm(data: InitData) -> None:
    data.out(
        '[upload-config] Storing the configuration used in ConfigMap "kubeadm-config" in the "kube-system" Namespace'
    )
    apply(data, kubeadm_config_objects(dump_cluster_configuration(data.cfg.cluster)))


def run_kubelet(data: InitData) -> None:
    data.out(
        '[kubelet] Creating a ConfigMap "kubelet-config" in namespace kube-system with the configuration for the '
        "kubelets in the cluster"
    )
    apply(data, kubelet_config_objects(dump_yaml(data.cfg.kubelet)))


PHASE: Phase[InitData] = Phase(
    name="upload-config",
    short="Upload the kubeadm and kubelet configuration to a ConfigMap",
    children=(
        all_phase("Upload all configuration to a config map", _FLAGS),
        Phase(
            "kubeadm", "Upload the kubeadm ClusterConfiguration to a ConfigMap", run=run_kubeadm, inherit_flags=_FLAGS
        ),
        Phase("kubelet", "Upload the kubelet component config to a ConfigMap", run=run_kubelet, inherit_flags=_FLAGS),
    ),
)
