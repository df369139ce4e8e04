"""The `reset` workflow: kubeadm 1.33's phases `preflight`, `remove-etcd-member`, `cleanup-node` (one module each)."""

from __future__ import annotations

from pykubeadm.phases.reset import cleanup_node, preflight, remove_etcd_member
from pykubeadm.phases.reset.data import ResetData
from pykubeadm.workflow import Phase

__all__ = ["CLEANUP_INSTRUCTIONS", "ResetData", "reset_phases"]

#: What kubeadm prints after a successful reset (1.33 wording).
CLEANUP_INSTRUCTIONS = """
The reset process does not perform cleanup of CNI plugin configuration,
network filtering rules and kubeconfig files.

For information on how to perform this cleanup manually, please see:
    https://k8s.io/docs/reference/setup-tools/kubeadm/kubeadm-reset/

"""


def reset_phases() -> list[Phase[ResetData]]:
    return [preflight.PHASE, remove_etcd_member.PHASE, cleanup_node.PHASE]
