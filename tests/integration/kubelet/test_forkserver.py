"""The kubelet's fork server with real processes: a forked container's session, stdio (CRI log lines), working
directory, environment, /proc cmdline and environ, exit codes and signals, and that everything it forked dies with it
and it dies with the kubelet."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from pykubeadm.kubelet.builtin.forkserver import ForkedProcess, ForkServer, code_stamp, forkable, set_proc_args

pytestmark = pytest.mark.integration

ARGV = [sys.executable, "-m", "pykubeadm", "component", "kube-scheduler", "--v=2"]


def _container(args: list[str]) -> int:
    """What the test server's containers run: report where they are, then exit or wait for a signal (--silent: wait
    without a word, as a component that has nothing to log yet)."""
    while "--silent" in args:
        time.sleep(1)
    preloaded = sorted(m for m in sys.modules if m.startswith("forkserver_test_"))
    report = {"args": args, "argv": sys.argv[1:], "cwd": os.getcwd(), "foo": os.environ.get("FOO")}
    print(json.dumps({**report, "preloaded": preloaded}))
    print("to stderr", file=sys.stderr)
    sys.stdout.flush()
    if "--exit" in args:
        return int(args[args.index("--exit") + 1])
    while True:
        time.sleep(1)


@pytest.fixture
def server() -> Iterator[ForkServer]:
    started = ForkServer.start(modules={}, runner=_container)
    assert started is not None
    yield started
    started.close()


def _has_stdout(log: Path) -> bool:
    return "stdout" in log.read_text()


def _cri_lines(log: Path) -> list[tuple[str, str]]:
    return [(line.split(" ", 3)[1], line.split(" ", 3)[3]) for line in log.read_text().splitlines()]


async def _until(what: str, check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


async def test_a_forked_container_runs_as_if_execd(server: ForkServer, tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    env = {"FOO": "bar", "PATH": "/usr/bin:/bin"}
    proc = await ForkedProcess.start(server, ARGV, env, log, str(tmp_path))
    assert proc.pid is not None and proc.running()
    await _until("the container's output", lambda: log.exists() and "to stderr" in log.read_text())
    assert os.getsid(proc.pid) == proc.pid  # its own session, as every container
    assert Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[1] == str(server.pid)
    lines = dict(_cri_lines(log))
    assert lines["stderr"] == "to stderr"
    report = json.loads(lines["stdout"])
    assert report == {"args": ARGV[3:], "argv": ARGV[3:], "cwd": str(tmp_path), "foo": "bar", "preloaded": []}
    cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[:-1]
    environ = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")[:-1]
    if _can_set_proc_args():
        assert [a.decode() for a in cmdline] == ARGV
        assert sorted(e.decode() for e in environ) == ["FOO=bar", "PATH=/usr/bin:/bin"]
    else:  # the server's own arguments (this test's interpreter)
        assert cmdline[0].decode() == sys.executable
    proc.signal(signal.SIGTERM)
    assert await proc.wait() == 128 + signal.SIGTERM
    assert proc.returncode == 128 + signal.SIGTERM and not proc.running()


async def test_exit_codes_reach_the_kubelet(server: ForkServer, tmp_path: Path) -> None:
    codes = []
    for code in (0, 3):
        proc = await ForkedProcess.start(server, [*ARGV, "--exit", str(code)], {}, tmp_path / f"{code}.log", None)
        codes.append(await asyncio.wait_for(proc.wait(), 10))
    assert codes == [0, 3]


async def test_the_real_runner_runs_pykubeadm(tmp_path: Path) -> None:
    real = ForkServer.start(modules={"kube-apiserver": ("pykubeadm.cli.main",)})
    assert real is not None
    try:
        log = tmp_path / "0.log"
        argv = [sys.executable, "-m", "pykubeadm", "version", "-o", "short"]
        proc = await ForkedProcess.start(real, argv, dict(os.environ), log, None)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        await _until("the version line", lambda: "stdout" in log.read_text())
        assert _cri_lines(log) == [("stdout", "v1.33.0")]
    finally:
        real.close()


def _gated_server(tmp_path: Path, modules: Mapping[str, tuple[str, ...]], gate: Path) -> ForkServer:
    """A fork server whose module `forkserver_test_gate` (in `tmp_path`) holds its imports until `gate` exists; the
    other modules named are empty modules in `tmp_path`."""
    (tmp_path / "forkserver_test_gate.py").write_text(
        "import os, time\n"
        f"deadline = time.monotonic() + 30\nwhile not os.path.exists({str(gate)!r}) and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
    )
    for names in modules.values():
        for name in names:
            if name != "forkserver_test_gate":
                (tmp_path / f"{name}.py").write_text("")
    sys.path.insert(0, str(tmp_path))
    try:
        started = ForkServer.start(modules=modules, runner=_container)
    finally:
        sys.path.remove(str(tmp_path))
    assert started is not None
    return started


async def test_a_component_is_forked_once_its_modules_are_imported(tmp_path: Path) -> None:
    # kube-apiserver's module holds the server's imports until the test opens its gate. The two requests sent
    # meanwhile are then served: kube-proxy, which has no modules of its own, at once; kube-scheduler once its module
    # is in too (it would import it again otherwise).
    gate = tmp_path / "gate"
    modules = {"kube-apiserver": ("forkserver_test_gate",), "kube-scheduler": ("forkserver_test_scheduler",)}
    started = _gated_server(tmp_path, modules, gate)
    try:
        logs = {name: tmp_path / f"{name}.log" for name in ("kube-scheduler", "kube-proxy")}
        asked = [
            asyncio.ensure_future(ForkedProcess.start(started, [*ARGV[:4], name, "--exit", "0"], {}, log, None))
            for name, log in logs.items()
        ]
        await _until("both requests to be sent", lambda: len(started._replies) == 2)
        gate.touch()
        for proc in await asyncio.wait_for(asyncio.gather(*asked), 30):
            assert await asyncio.wait_for(proc.wait(), 30) == 0
        preloaded = {}
        for name, log in logs.items():
            await _until(f"{name}'s report", functools.partial(_has_stdout, log))
            preloaded[name] = json.loads(dict(_cri_lines(log))["stdout"])["preloaded"]
        assert preloaded == {
            "kube-proxy": ["forkserver_test_gate"],
            "kube-scheduler": ["forkserver_test_gate", "forkserver_test_scheduler"],
        }
    finally:
        started.close()


def _running_with(marker: str) -> list[int]:
    """Live processes whose command line has `marker` as an argument."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if entry.isdigit() and marker in args and not _gone(int(entry)):
            found.append(int(entry))
    return found


async def test_a_container_forked_for_a_start_given_up_is_killed(tmp_path: Path) -> None:
    # The kubelet gives up a start (its Pod is stopped) while the server still imports the component's module: the
    # container the server forks afterwards is killed, not left running untracked.
    gate = tmp_path / "gate"
    started = _gated_server(tmp_path, {"kube-scheduler": ("forkserver_test_gate",)}, gate)
    marker = f"--given-up={tmp_path}"
    try:
        argv = [*ARGV, marker, "--silent"]
        start = asyncio.ensure_future(ForkedProcess.start(started, argv, {}, tmp_path / "0.log", None))
        await _until("the request to be sent", lambda: len(started._replies) == 1)
        start.cancel()
        with pytest.raises(asyncio.CancelledError):
            await start
        gate.touch()
        # Served in order: once this one is forked, the given-up one was forked (and its pid answered) before it.
        after = await ForkedProcess.start(started, [*ARGV, "--exit", "0"], {}, tmp_path / "1.log", None)
        assert await asyncio.wait_for(after.wait(), 30) == 0
        await _until("the given-up container to be gone", lambda: not _running_with(marker), timeout=30)
    finally:
        started.close()


async def test_containers_die_with_the_server(server: ForkServer, tmp_path: Path) -> None:
    proc = await ForkedProcess.start(server, ARGV, {}, tmp_path / "0.log", None)
    assert proc.pid is not None
    server.close()
    assert await asyncio.wait_for(proc.wait(), 10) == 128 + signal.SIGKILL
    await _until("the container to be gone", lambda: _gone(proc.pid or 0))
    with pytest.raises(OSError):
        await ForkedProcess.start(server, ARGV, {}, tmp_path / "1.log", None)


_KUBELET = """
import asyncio, sys, time
from tests.integration.kubelet.test_forkserver import ARGV, _container
from pykubeadm.kubelet.builtin.forkserver import ForkServer, ForkedProcess

server = ForkServer.start(modules={}, runner=_container)

async def main():
    proc = await ForkedProcess.start(server, ARGV, {}, __import__("pathlib").Path(sys.argv[1]), None)
    print(server.pid, proc.pid, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


def test_the_server_and_its_containers_die_with_the_kubelet(tmp_path: Path) -> None:
    kubelet = subprocess.Popen(
        [sys.executable, "-c", _KUBELET, str(tmp_path / "0.log")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[3],
    )
    try:
        assert kubelet.stdout is not None
        server_pid, container_pid = (int(p) for p in kubelet.stdout.readline().split())
        assert not _gone(server_pid) and not _gone(container_pid)
    finally:
        kubelet.kill()
        kubelet.wait()
    asyncio.run(_until("the server and the container to be gone", lambda: _gone(server_pid) and _gone(container_pid)))


def test_only_the_control_plane_components_are_forked() -> None:
    entry = [sys.executable, "-m", "pykubeadm", "component"]
    assert all(
        forkable([*entry, name, "--v=2"]) for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
    )
    assert not forkable([*entry, "kube-proxy"])
    assert not forkable([*entry, "coredns"])
    assert not forkable(["/usr/bin/python3.11", "-m", "pykubeadm", "component", "kube-apiserver"])
    assert not forkable(["/usr/bin/etcd", "--data-dir=/var/lib/etcd"])


def _can_set_proc_args() -> bool:
    """Whether this kernel lets an unprivileged process set its /proc cmdline (asked in a throw-away child)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os._exit(0 if set_proc_args(["x"], {}) else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def test_a_changed_pykubeadm_is_execd_not_forked(server: ForkServer, tmp_path: Path) -> None:
    # An upgraded (or edited) pykubeadm: the server holds the code it imported before, so it is not used.
    package = tmp_path / "pykubeadm"
    (package / "__pycache__").mkdir(parents=True)
    (package / "a.py").write_text("")
    (package / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"")
    before = code_stamp(package)
    os.utime(package / "__pycache__" / "a.cpython-311.pyc", ns=(before + 10**9, before + 10**9))
    assert code_stamp(package) == before  # bytecode caches are not the code
    os.utime(package / "a.py", ns=(before + 10**9, before + 10**9))
    assert code_stamp(package) == before + 10**9
    assert server.current()  # this tree has not changed since the server was forked
    server.stamp -= 1
    server._checked = (float("-inf"), True)
    assert not server.current()
