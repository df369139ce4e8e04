"""The `join` workflow: the phase tree of kubeadm 1.33's `kubeadm join --help` (one module per concern)."""

from __future__ import annotations

from pykubeadm.phases.join import control_plane, kubelet_start, kubelet_wait_bootstrap, preflight
from pykubeadm.phases.join.data import JoinData
from pykubeadm.workflow import Phase

__all__ = ["JoinData", "join_phases"]


def join_phases() -> list[Phase[JoinData]]:
    return [
        preflight.PHASE,
        control_plane.CONTROL_PLANE_PREPARE,
        kubelet_start.PHASE,
        control_plane.ETCD_JOIN,
        kubelet_wait_bootstrap.PHASE,
        control_plane.CONTROL_PLANE_JOIN,
        control_plane.WAIT_CONTROL_PLANE,
    ]
