"""reset phase `preflight`: the confirmation prompt (unless --force) and the root check (kubeadm's RunRootCheckOnly)."""

from __future__ import annotations

from pathlib import Path

from pykubeadm.errors import KubeadmError
from pykubeadm.phases.reset.data import ResetData
from pykubeadm.preflight import RealHost, root_check, run_checks, state_writer
from pykubeadm.workflow import Phase

__all__ = ["PHASE", "confirm"]

WARNING = "[reset] WARNING: Changes made to this host by 'kubeadm init' or 'kubeadm join' will be reverted."
PROMPT = "[reset] Are you sure you want to proceed? [y/N]: "


def confirm(data: ResetData) -> None:
    """Ask before reverting the host; only "y"/"Y" goes on (KubeadmError "aborted reset operation" otherwise)."""
    data.out(WARNING)
    answer = data.ask(PROMPT)
    if answer.lower() != "y":
        raise KubeadmError("aborted reset operation")


def _run(data: ResetData) -> None:
    if not data.force:
        confirm(data)
    data.out("[preflight] Running pre-flight checks")
    if data.layout.root == Path("/"):
        host = data.state.get("preflight_host") or RealHost()
        write = state_writer(data.state)
        run_checks(root_check(host), data.ignore_preflight_errors, write)


PHASE: Phase[ResetData] = Phase(
    name="preflight",
    short="Run reset pre-flight checks",
    long="Run pre-flight checks for kubeadm reset.",
    run=_run,
    inherit_flags=("ignore-preflight-errors", "force", "dry-run"),
)
