"""`lab stop`'s process finder with real processes: a Pod sandbox left behind by a killed kubelet (its session leader
gone, its arguments naming the node's root) is found with its descendants; a process of a live session that merely
names the root (someone's `tail -f`) is not."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from pykubeadm.phases.reset.processes import orphaned_pod_processes


def _wait_for(fn, timeout: float = 10.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not (res := fn()):
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)
    return res


def test_orphaned_sandbox_and_its_children_are_found_a_live_sessions_process_is_not(tmp_path: Path) -> None:
    root = tmp_path / "node"
    (root / "run").mkdir(parents=True)
    pidfile = tmp_path / "pids"
    # the kubelet's way: a new session whose leader exits, leaving the sandbox (and its child) behind
    script = f'sh -c "sleep 300 & echo \\$! > {pidfile}.child; wait" {root}/run/sandbox & echo $! > {pidfile}; exit 0'
    leader = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    leader.wait()
    sandbox = int(_wait_for(lambda: pidfile.exists() and pidfile.read_text().strip()))
    child = int(_wait_for(lambda: Path(f"{pidfile}.child").exists() and Path(f"{pidfile}.child").read_text().strip()))
    # in this (live) session: names the root, is left alone
    tail = subprocess.Popen(["sleep", "300", f"{root}/var/log/x.log"])
    try:
        found = orphaned_pod_processes(root)
        assert sandbox in found and child in found
        assert tail.pid not in found and os.getpid() not in found
        assert orphaned_pod_processes(tmp_path / "other") == []
    finally:
        for pid in (sandbox, child, tail.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        tail.wait()
