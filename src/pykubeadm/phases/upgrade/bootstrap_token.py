"""upgrade phase `bootstrap-token`: apply the TLS-bootstrap RBAC rules again (kubeadm-facts §7.2), as kubeadm does so
that rules added by a newer kubeadm reach clusters created by an older one."""

from __future__ import annotations

from pykubeadm.phases.bootstraptoken import bootstrap_rbac
from pykubeadm.phases.upgrade.data import UpgradeData
from pykubeadm.workflow import Phase

__all__ = ["PHASE"]

_LINES = (
    "[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to get nodes",
    "[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to post CSRs in order for nodes to get "
    "long term certificate credentials",
    "[bootstrap-token] Configured RBAC rules to allow the csrapprover controller automatically approve CSRs from a "
    "Node Bootstrap Token",
    "[bootstrap-token] Configured RBAC rules to allow certificate rotation for all node client certificates in the "
    "cluster",
)


def _run(data: UpgradeData) -> None:
    data.out("[upgrade/bootstrap-token] Configuring bootstrap token and cluster-info RBAC rules")
    rbac = bootstrap_rbac()
    for objs, line in zip((rbac[:2], rbac[2:3], rbac[3:4], rbac[4:]), _LINES, strict=True):
        data.apply(objs)
        data.out(line)


PHASE: Phase[UpgradeData] = Phase(
    name="bootstrap-token",
    short="Configures bootstrap token and cluster-info RBAC rules",
    run=_run,
    inherit_flags=("config", "dry-run", "kubeconfig"),
)
