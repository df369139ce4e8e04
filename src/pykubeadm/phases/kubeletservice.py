"""kubeadm's phases start, stop and pre-warm the node's kubelet through the kubelet's service control
(`pykubeadm.kubelet.service`), re-exported here for the phases, the CLI and the lab."""

from __future__ import annotations

from pykubeadm.kubelet.service import (
    FLAGS_FROM_STDIN,
    FORK_SERVER,
    discard_prewarmed_kubelets,
    kubelet_args,
    kubelet_command,
    kubelet_pid,
    kubelet_will_start,
    prewarm_kubelet,
    release_prewarmed_kubelets,
    start_kubelet,
    stop_kubelet,
    uses_systemd,
    warm_kubelet_command,
)

__all__ = [
    "FLAGS_FROM_STDIN",
    "FORK_SERVER",
    "discard_prewarmed_kubelets",
    "kubelet_args",
    "kubelet_command",
    "kubelet_pid",
    "kubelet_will_start",
    "prewarm_kubelet",
    "release_prewarmed_kubelets",
    "start_kubelet",
    "stop_kubelet",
    "uses_systemd",
    "warm_kubelet_command",
]
