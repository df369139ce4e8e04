"""kubeadm's preflight checks: the checks (checks.py), the host adapter they read through (host.py, with a fake), the
init/join check lists (nodechecks.py) and the runner with --ignore-preflight-errors semantics (runner.py)."""

from pykubeadm.preflight.checks import Checker
from pykubeadm.preflight.host import FakeHost, Host, RealHost
from pykubeadm.preflight.nodechecks import (
    InitCheckParams,
    JoinCheckParams,
    init_node_checks,
    join_node_checks,
    root_check,
)
from pykubeadm.preflight.runner import ignore_set, run_checks, state_writer

__all__ = [
    "Checker",
    "FakeHost",
    "Host",
    "InitCheckParams",
    "JoinCheckParams",
    "RealHost",
    "ignore_set",
    "init_node_checks",
    "join_node_checks",
    "root_check",
    "run_checks",
    "state_writer",
]
