"""ShimProcess.adopt when the recorded shim exits while a restarted kubelet adopts it (between adopt's two reads of its
start time): the container is seen as gone, never an error that stops the adoption."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pykubeadm.kubelet.builtin import shim
from pykubeadm.kubelet.builtin.shim import ShimProcess, proc_start_time


def test_a_shim_that_exits_during_adoption_is_adopted_as_exited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    child = subprocess.Popen(["sleep", "60"])  # stands in for the shim: only its pid and start time are read
    try:
        start = proc_start_time(child.pid)
        assert start is not None
        (tmp_path / "shim.json").write_text(json.dumps({"shimPid": child.pid, "shimStart": start, "pid": None}))
        reads: list[int | None] = []

        def start_time_then_exit(pid: int) -> int | None:
            value = proc_start_time(pid)
            reads.append(value)
            if len(reads) == 1:  # the shim exits (and is reaped) right after adopt's first look at it
                child.kill()
                child.wait()
            return value

        monkeypatch.setattr(shim, "proc_start_time", start_time_then_exit)
        adopted = ShimProcess.adopt(tmp_path)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert reads == [start, None]
    assert adopted is not None
    assert not adopted.running()
    assert adopted.returncode == 255  # died without recording an exit status, as when it dies with its container
