"""upgrade hidden phase `kubeconfig`: this node's kubeconfig files (their client certificates are renewed with the
control plane); prints kubeadm's confirmation, or that a worker has none to upgrade."""

from __future__ import annotations

from pykubeadm.phases.upgrade.data import UpgradeData
from pykubeadm.workflow import Phase

__all__ = ["PHASE"]


def _run(data: UpgradeData) -> None:
    if not data.control_plane:
        data.out("[upgrade/kubeconfig] Skipping phase. Not a control plane node.")
        return
    if data.dry_run:
        data.out("[dryrun] Would upgrade the kubeconfig files for this node")
        return
    data.out("[upgrade/kubeconfig] The kubeconfig files for this node were successfully upgraded!")


PHASE: Phase[UpgradeData] = Phase(
    name="kubeconfig",
    short="Upgrade kubeconfig files for this node",
    run=_run,
    hidden=True,
    inherit_flags=("config", "dry-run", "kubeconfig"),
)
