"""The `upgrade apply` and `upgrade node` workflows (phase trees as `kubeadm upgrade apply|node --help` list them)
plus the pure pieces `upgrade plan` and `upgrade diff` use (policy, plan, diff)."""

from __future__ import annotations

from pykubeadm.phases.upgrade import (
    addon,
    bootstrap_token,
    control_plane,
    kubeconfig,
    kubelet_config,
    post_upgrade,
    preflight,
    upload_config,
)
from pykubeadm.phases.upgrade.data import UpgradeData
from pykubeadm.workflow import Phase

__all__ = ["UpgradeData", "apply_phases", "node_phases"]


def apply_phases() -> list[Phase[UpgradeData]]:
    return [
        preflight.APPLY_PHASE,
        control_plane.PHASE,
        upload_config.PHASE,
        kubeconfig.PHASE,
        kubelet_config.PHASE,
        bootstrap_token.PHASE,
        addon.PHASE,
        post_upgrade.PHASE,
    ]


def node_phases() -> list[Phase[UpgradeData]]:
    return [
        preflight.NODE_PHASE,
        control_plane.PHASE,
        kubeconfig.PHASE,
        kubelet_config.PHASE,
        addon.PHASE,
        post_upgrade.PHASE,
    ]
