"""init phase `upload-config`: the kubeadm-config and kubelet-config ConfigMaps with their Roles (§7.4, §7.5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.phases.init.cluster import admin_client, apply
from pykubeadm.workflow import Phase, all_phase

if TYPE_CHECKING:
    from pykubeadm.phases.init.data import InitData

# The ConfigMaps' builders and the config API's dumpers are imported when a sub-phase runs, not with the phase tree.

__all__ = ["PHASE"]

_FLAGS = ("config", "kubeconfig", "dry-run")


def run_kubeadm(data: InitData) -> None:
    from pykubeadm.api import dump_cluster_configuration
    from pykubeadm.phases.uploadconfig import kubeadm_config_objects

    data.out(
        '[upload-config] Storing the configuration used in ConfigMap "kubeadm-config" in the "kube-system" Namespace'
    )
    apply(data, kubeadm_config_objects(dump_cluster_configuration(data.cfg.cluster)))


def run_kubelet(data: InitData) -> None:
    from pykubeadm.api import features
    from pykubeadm.api.yamlio import dump_yaml
    from pykubeadm.phases.patchnode import annotate_cri_socket  # imports the Kubernetes client
    from pykubeadm.phases.uploadconfig import kubelet_config_objects

    data.out(
        '[kubelet] Creating a ConfigMap "kubelet-config" in namespace kube-system with the configuration for the '
        "kubelets in the cluster"
    )
    apply(data, kubelet_config_objects(dump_yaml(data.cfg.kubelet)))
    if features.enabled(data.cfg.cluster.feature_gates, "NodeLocalCRISocket") or data.dry_run:
        return
    reg = data.cfg.init.node_registration
    timeouts = data.cfg.init.timeouts
    timeout = (timeouts.kubernetes_api_call if timeouts else None) or c.KUBERNETES_API_CALL_TIMEOUT
    annotate_cri_socket(admin_client(data), reg.name, reg.cri_socket, timeout.total_seconds())


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
