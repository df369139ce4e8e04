"""The per-container shim with real processes: exit status recorded in the container's directory, adoption by a new
owner (same process, exit still seen), a reused pid never taken for the shim, and a stop that takes grandchildren."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

from tests.integration.kubelet.kubelet_procs import alive

from pykubeadm.kubelet.shim import ShimProcess, proc_start_time


def env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


async def test_exit_status_is_recorded_and_output_goes_to_the_log(tmp_path: Path) -> None:
    proc = await ShimProcess.start(
        tmp_path / "c1", ["sh", "-c", "echo out; echo err >&2; exit 7"], env(), tmp_path / "0.log"
    )
    assert await asyncio.wait_for(proc.wait(), 10) == 7
    assert (tmp_path / "c1/exit").read_text().strip() == "7"
    assert (tmp_path / "0.log").read_text().split() == ["out", "err"]


async def test_a_new_owner_adopts_the_running_container_and_sees_its_exit(tmp_path: Path) -> None:
    first = await ShimProcess.start(tmp_path / "c", ["sleep", "60"], env(), tmp_path / "log")
    assert first.pid is not None and alive(first.pid)
    adopted = ShimProcess.adopt(tmp_path / "c")  # what a restarted kubelet does with the recorded files
    assert adopted is not None and adopted.running() and adopted.pid == first.pid
    adopted.signal(signal.SIGTERM)
    assert await asyncio.wait_for(adopted.wait(), 10) == 128 + signal.SIGTERM
    assert await asyncio.wait_for(first.wait(), 10) == 128 + signal.SIGTERM


async def test_a_reused_pid_is_not_the_shim(tmp_path: Path) -> None:
    proc = await ShimProcess.start(tmp_path / "c", ["true"], env(), tmp_path / "log")
    assert await asyncio.wait_for(proc.wait(), 10) == 0
    record = json.loads((tmp_path / "c/shim.json").read_text())
    record["shimPid"] = os.getpid()  # a live process with another start time than the recorded one
    (tmp_path / "c/shim.json").write_text(json.dumps(record))
    (tmp_path / "c/exit").unlink()
    adopted = ShimProcess.adopt(tmp_path / "c")
    assert adopted is not None and not adopted.running()
    assert proc_start_time(os.getpid()) != record["shimStart"]


async def test_kill_all_stops_the_container_and_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    proc = await ShimProcess.start(
        tmp_path / "c", ["sh", "-c", f"sleep 60 & echo $! > {pid_file}; trap '' TERM; wait"], env(), tmp_path / "log"
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert loop.time() < deadline
        await asyncio.sleep(0.01)
    child = int(pid_file.read_text())
    proc.kill_all()
    assert await asyncio.wait_for(proc.wait(), 10) == 137
    while alive(child):
        assert loop.time() < deadline, "the container's child survived"
        await asyncio.sleep(0.01)


async def test_a_signal_to_the_group_is_the_containers_to_handle_and_the_shim_records_it(tmp_path: Path) -> None:
    # what reset sends first: the shim stays until its container ends (so a later SIGKILL of the group reaches all)
    ready = tmp_path / "ready"
    script = f"trap 'exit 5' TERM; touch {ready}; while true; do sleep 0.05; done"
    proc = await ShimProcess.start(tmp_path / "c", ["sh", "-c", script], env(), tmp_path / "log")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not ready.exists():  # the container's trap is in place
        assert loop.time() < deadline
        await asyncio.sleep(0.01)
    os.killpg(proc.shim_pid, signal.SIGTERM)
    assert await asyncio.wait_for(proc.wait(), 10) == 5
