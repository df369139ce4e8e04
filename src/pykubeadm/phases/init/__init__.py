"""The `init` workflow: the phase tree exactly as `kubeadm init --help` lists it (one module per phase)."""

from __future__ import annotations

from pykubeadm.phases.init import certs, control_plane, etcd, kubeconfig, kubelet_start, preflight
from pykubeadm.phases.init.data import InitData
from pykubeadm.phases.init.not_yet import pending
from pykubeadm.workflow import Phase, all_phase

__all__ = ["InitData", "init_phases"]


def init_phases() -> list[Phase[InitData]]:
    return [
        preflight.PHASE,
        certs.PHASE,
        kubeconfig.PHASE,
        etcd.PHASE,
        control_plane.PHASE,
        kubelet_start.PHASE,
        pending("wait-control-plane", "Wait for the control plane to start"),
        pending(
            "upload-config",
            "Upload the kubeadm and kubelet configuration to a ConfigMap",
            children=(
                all_phase("Upload all configuration to a config map"),
                pending("kubeadm", "Upload the kubeadm ClusterConfiguration to a ConfigMap"),
                pending("kubelet", "Upload the kubelet component config to a ConfigMap"),
            ),
        ),
        pending("upload-certs", "Upload certificates to kubeadm-certs"),
        pending("mark-control-plane", "Mark a node as a control-plane"),
        pending("bootstrap-token", "Generates bootstrap tokens used to join a node to a cluster"),
        pending(
            "kubelet-finalize",
            "Updates settings relevant to the kubelet after TLS bootstrap",
            children=(
                all_phase("Run all kubelet-finalize phases"),
                pending("enable-client-cert-rotation", "Enable kubelet client certificate rotation"),
            ),
        ),
        pending(
            "addon",
            "Install required addons for passing conformance tests",
            children=(
                all_phase("Install all the addons"),
                pending("coredns", "Install the CoreDNS addon to a Kubernetes cluster"),
                pending("kube-proxy", "Install the kube-proxy addon to a Kubernetes cluster"),
            ),
        ),
        pending("show-join-command", "Show the join command for control-plane and worker node"),
    ]
