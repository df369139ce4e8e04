"""Add-on containers forked by the lab's zygote (kubelet/builtin/zygote.py, native/pod-sandbox.c `-z`), with real processes:
the program is PID 1 of its own PID namespace, with the container's hostname and stdio, and not the launcher's child;
nsenter into the launcher (what `kubectl exec` runs) finds the program there; a signal to the launcher reaches the
program and its status is the launcher's; a killed launcher takes the program with it; without a zygote the launcher
execs the program as before."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.integration.kubelet.kubelet_procs import alive, children_of, cmdline, wait_until

from pykubeadm.kubelet.builtin import sandbox
from pykubeadm.testing.apiserver import free_port

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sandbox.can_isolate(), reason="needs root and mount/PID namespaces"),
]


@pytest.fixture
def corefile(tmp_path: Path) -> Path:
    """A DNS server's configuration on a free port: a built-in component that runs until it is signalled."""
    path = tmp_path / "Corefile"
    path.write_text(f".:{free_port()} {{\n    errors\n}}\n")
    return path


def _coredns(corefile: Path, zygote_path: Path | None) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "pykubeadm", "component", "coredns", "-conf", str(corefile)]
    launcher = sandbox.sandboxed_argv(argv, [], hostname="dns-pod", zygote=zygote_path)
    return subprocess.Popen(launcher, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _serving(proc: subprocess.Popen[bytes], timeout: float = 60) -> bytes:
    """The launcher's output up to the DNS server's start-up banner (its signal handlers are in place by then: as PID 1
    of its namespace, it ignores a signal it has no handler for, as any container's PID 1 does)."""
    assert proc.stdout is not None
    out = b""
    deadline = time.monotonic() + timeout
    while b"CoreDNS-" not in out:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([proc.stdout], [], [], remaining)[0]:
            raise AssertionError(f"the DNS server did not start: {out.decode(errors='replace')}")
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            raise AssertionError(f"the launcher ended: {out.decode(errors='replace')}")
        out += chunk
    return out


def _program(corefile: Path, launcher: int) -> int:
    """The pid of the DNS server started with `corefile` (not its launcher), once it runs."""

    def find() -> int:
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != launcher and str(corefile) in cmdline(int(entry)):
                return int(entry)
        return 0

    found = wait_until(find, 60, "the DNS server to run")
    assert isinstance(found, int)
    return found


def _status(pid: int, field: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def _inside(launcher: int, script: str) -> str:
    """`script` run by sh in the container, entered as `kubectl exec` enters it (sandbox.enter_argv)."""
    argv = [*sandbox.enter_argv(launcher), "sh", "-c", script]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(30)


def test_a_forked_add_on_is_pid_1_of_its_own_namespace_and_ends_with_its_launcher(sock: Path, corefile: Path) -> None:
    proc = _coredns(corefile, sock)
    try:
        _serving(proc)
        program = _program(corefile, proc.pid)
        assert program not in children_of(proc.pid)  # forked by the zygote, not exec'd by the launcher
        relay = int(_status(program, "PPid"))
        assert cmdline(relay) == [f"pykubeadm: zygote relay of coredns for launcher {proc.pid}"]
        assert _status(program, "NSpid").split()[-1] == "1"
        assert os.readlink(f"/proc/{program}/ns/pid") == os.readlink(f"/proc/{proc.pid}/ns/pid_for_children")
        assert cmdline(program)[:5] == [sys.executable, "-m", "pykubeadm", "component", "coredns"]
        hostname, first = _inside(proc.pid, "hostname; tr '\\0' ' ' < /proc/1/cmdline").splitlines()
        assert hostname == "dns-pod" and f"component coredns -conf {corefile}" in first
        proc.send_signal(signal.SIGTERM)  # to the launcher, as the kubelet stops a container
        assert proc.wait(30) == 0
        assert b"SIGTERM: Shutting down servers" in (proc.stdout.read() if proc.stdout else b"")
        assert not alive(program)
    finally:
        _stop(proc)


def test_a_killed_launcher_takes_its_forked_program_with_it(sock: Path, corefile: Path) -> None:
    proc = _coredns(corefile, sock)
    try:
        _serving(proc)
        program = _program(corefile, proc.pid)
        assert program not in children_of(proc.pid)
        proc.kill()
        proc.wait(30)
        wait_until(lambda: not alive(program), 30, "the program to end with its launcher")
    finally:
        _stop(proc)


def test_without_a_zygote_the_launcher_execs_the_program(tmp_path: Path, corefile: Path) -> None:
    proc = _coredns(corefile, tmp_path / "no-zygote.sock")
    try:
        _serving(proc)
        program = _program(corefile, proc.pid)
        assert program in children_of(proc.pid)
        assert _status(program, "NSpid").split()[-1] == "1"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        _stop(proc)


@pytest.mark.parametrize("forked", [True, False])
def test_the_program_runs_in_the_pods_network_namespace(
    sock: Path, corefile: Path, tmp_path: Path, forked: bool
) -> None:
    from pykubeadm.kubelet.builtin import netns

    pinned = tmp_path / "pod" / "netns"
    netns.create(pinned)
    proc = None
    try:
        argv = [sys.executable, "-m", "pykubeadm", "component", "coredns", "-conf", str(corefile)]
        launcher = sandbox.sandboxed_argv(
            argv, [], hostname="dns-pod", zygote=sock if forked else tmp_path / "none.sock", netns=pinned
        )
        proc = subprocess.Popen(launcher, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _serving(proc)
        program = _program(corefile, proc.pid)
        want = f"net:[{os.stat(pinned).st_ino}]"
        assert os.readlink(f"/proc/{program}/ns/net") == want != os.readlink("/proc/self/ns/net")
        # kubectl exec's way in lands in the Pod's network too
        entered = subprocess.run(
            [*sandbox.enter_argv(proc.pid), "readlink", "/proc/self/ns/net"], capture_output=True, text=True, timeout=30
        )
        assert entered.stdout.strip() == want, entered.stderr
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        netns.remove(pinned)


def test_a_forked_program_joins_its_containers_cgroups(sock: Path, corefile: Path) -> None:
    """A container with limits (the network addon's 100m CPU, 50Mi memory) forked by the zygote is charged to and
    limited by its own cgroups, as an exec'd one: the program is in them, its zygote relay is not."""
    from pykubeadm.kubelet.builtin.cgroups import NodeCgroups

    node = NodeCgroups.detect(f"zygote-test-{os.getpid()}")
    if node is None:
        pytest.skip("no writable cgroup hierarchy")
    spec = {"name": "c", "resources": {"limits": {"cpu": "100m", "memory": "50Mi"}}}
    pod = node.pod("zygote-cgroups", "Burstable")
    proc = None
    try:
        pod.create({"containers": [spec]})
        container = pod.create_container("cid", spec, privileged=True)
        argv = [sys.executable, "-m", "pykubeadm", "component", "coredns", "-conf", str(corefile)]
        launcher = sandbox.sandboxed_argv(argv, [], hostname="dns-pod", zygote=sock, cgroups=container.procs_files())
        proc = subprocess.Popen(launcher, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _serving(proc)
        program = _program(corefile, proc.pid)
        assert program not in children_of(proc.pid)  # forked by the zygote
        relay = int(_status(program, "PPid"))
        for procs in container.procs_files():
            members = {int(p) for p in Path(procs).read_text().split()}
            assert program in members and relay not in members, procs
    finally:
        if proc is not None:
            _stop(proc)
        node.remove_all()
