"""The `init` workflow: the phase tree exactly as `kubeadm init --help` lists it (one module per phase)."""

from __future__ import annotations

from pykubeadm.phases.init import (
    addon,
    bootstrap_token,
    certs,
    control_plane,
    etcd,
    kubeconfig,
    kubelet_finalize,
    kubelet_start,
    mark_control_plane,
    preflight,
    show_join_command,
    upload_certs,
    upload_config,
    wait_control_plane,
)
from pykubeadm.phases.init.data import InitData
from pykubeadm.workflow import Phase

__all__ = ["InitData", "init_phases"]


def init_phases() -> list[Phase[InitData]]:
    return [
        preflight.PHASE,
        certs.PHASE,
        kubeconfig.PHASE,
        etcd.PHASE,
        control_plane.PHASE,
        kubelet_start.PHASE,
        wait_control_plane.PHASE,
        upload_config.PHASE,
        upload_certs.PHASE,
        mark_control_plane.PHASE,
        bootstrap_token.PHASE,
        kubelet_finalize.PHASE,
        addon.PHASE,
        show_join_command.PHASE,
    ]
