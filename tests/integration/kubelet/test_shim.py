"""The per-container shim with real processes: exit status recorded in the container's directory, adoption by a new
owner (same process, exit still seen), a reused pid never taken for the shim, and a stop that takes grandchildren."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

from tests.integration.kubelet.kubelet_procs import alive

from pykubeadm.kubelet.builtin.shim import ShimProcess, proc_start_time


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


def cri_logger(tmp_path: Path) -> str:
    from pykubeadm.kubelet.builtin.sandbox import cri_log_path
    from pykubeadm.layout import Layout

    return str(cri_log_path(Layout(tmp_path / "node")))


async def wait_until(pred: object, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():  # type: ignore[operator]
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_output_is_written_in_the_cri_format_by_the_native_log_writer(tmp_path: Path) -> None:
    from pykubeadm.kubelet.crilog import MAX_LINE, parse_line

    script = f"echo out; echo err >&2; head -c {MAX_LINE + 10} /dev/zero | tr '\\0' x; printf 'no newline'"
    log = tmp_path / "0.log"
    proc = await ShimProcess.start(tmp_path / "c", ["sh", "-c", script], env(), log, logger=cri_logger(tmp_path))
    assert await asyncio.wait_for(proc.wait(), 10) == 0
    # the writer ends once every writer of the pipes is gone: wait for its last line
    await wait_until(lambda: log.exists() and b"no newline" in log.read_bytes())
    lines = [parse_line(raw) for raw in log.read_bytes().splitlines()]
    assert all(line.time is not None for line in lines)
    got = [(line.stream, line.partial, line.content[:12]) for line in lines]
    assert ("stdout", False, b"out") in got and ("stderr", False, b"err") in got
    long = [line for line in lines if line.content.startswith(b"x")]
    assert long[0].partial and len(long[0].content) == MAX_LINE  # 16 KiB: a partial line, then the rest
    assert long[1].content.startswith(b"x" * 10) and long[1].content.endswith(b"no newline") and not long[1].partial


async def test_stdin_reaches_the_container_and_stdin_once_ends_it(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    proc = await ShimProcess.start(
        tmp_path / "c", ["sh", "-c", "read x; echo got $x; cat; echo eof"], env(), log, stdin=True, stdin_once=True
    )
    assert proc.stdin is not None
    proc.stdin.write(b"hello\nmore\n")
    await proc.stdin.drain()
    await wait_until(lambda: b"more" in log.read_bytes())
    proc.stdin.close()  # stdinOnce: the attach session ended, the container reads EOF
    assert await asyncio.wait_for(proc.wait(), 10) == 0
    assert log.read_text().split("\n")[:3] == ["got hello", "more", "eof"]


async def test_stdin_without_once_stays_open_for_a_new_owner(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    first = await ShimProcess.start(tmp_path / "c", ["sh", "-c", "cat"], env(), log, stdin=True)
    assert first.stdin is not None
    first.stdin.close()  # the kubelet goes away: the shim still holds the FIFO, cat sees no EOF
    adopted = ShimProcess.adopt(tmp_path / "c")
    assert adopted is not None and adopted.stdin is not None and adopted.running()
    adopted.stdin.write(b"again\n")
    await adopted.stdin.drain()
    await wait_until(lambda: b"again" in log.read_bytes())
    assert adopted.running()
    adopted.kill_all()
    await asyncio.wait_for(adopted.wait(), 10)


async def test_a_tty_container_gets_a_terminal_its_input_and_its_output_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    script = "test -t 0 && test -t 1 && echo is a tty; printf 'prompt> '; read x; echo got $x"
    proc = await ShimProcess.start(
        tmp_path / "c",
        ["sh", "-c", script],
        env(),
        log,
        logger=cri_logger(tmp_path),
        stdin=True,
        stdin_once=True,
        tty=True,
    )
    await wait_until(lambda: log.exists() and b"prompt> " in log.read_bytes())  # no newline yet: written at once
    assert proc.stdin is not None
    proc.stdin.write(b"hi\n")
    await proc.stdin.drain()
    assert await asyncio.wait_for(proc.wait(), 10) == 0
    await wait_until(lambda: b"got hi" in log.read_bytes())
    from pykubeadm.kubelet.crilog import render

    text = b"".join(render(log.read_bytes().splitlines(keepends=True))).decode()
    assert "is a tty\r\n" in text and "prompt> " in text and "got hi\r\n" in text
