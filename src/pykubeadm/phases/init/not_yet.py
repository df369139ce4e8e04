"""Declarations of init phases that need a running cluster; they fail clearly until issue 8 lands."""

from __future__ import annotations

from pykubeadm.errors import NotImplementedPhase
from pykubeadm.phases.init.data import InitData
from pykubeadm.workflow import Phase

__all__ = ["pending"]


def pending(
    name: str, short: str, issue: str = "issue 8", children: tuple[Phase[InitData], ...] = ()
) -> Phase[InitData]:
    def run(data: InitData) -> None:
        if data.dry_run:
            data.out(f"[dryrun] Would run phase {name!r}")
            return
        raise NotImplementedPhase(name, issue)

    return Phase(name=name, short=short, run=run, children=children, inherit_flags=("config", "kubeconfig", "dry-run"))
