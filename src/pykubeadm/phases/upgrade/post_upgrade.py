"""upgrade phase `post-upgrade`: kubeadm's clean-ups after an upgrade (removal of deprecated kubelet flags and
annotations of older releases). None of them applies to a cluster that pykubeadm created, so the phase only exists to
keep kubeadm's phase list (and `--skip-phases post-upgrade`) intact."""

from __future__ import annotations

import logging

from pykubeadm.phases.upgrade.data import UpgradeData
from pykubeadm.workflow import Phase

__all__ = ["PHASE"]

log = logging.getLogger(__name__)


def _run(data: UpgradeData) -> None:
    log.info("[upgrade/post-upgrade] no post-upgrade task applies to node %s", data.node_name)


PHASE: Phase[UpgradeData] = Phase(
    name="post-upgrade",
    short="Run post upgrade tasks",
    run=_run,
    inherit_flags=("config", "dry-run", "kubeconfig"),
)
