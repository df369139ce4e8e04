"""The lab's own servers stopped with real processes: a real HAProxy that `apply` started, and an external etcd
member found by its pid file that ignores SIGTERM; each `stop` ends the process (by pid, never by name) and removes
its pid file (and HAProxy's stats socket)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pykubeadm.errors import KubeadmError
from pykubeadm.lab.externaletcd import ExternalEtcd
from pykubeadm.lab.loadbalancer import LoadBalancer, haproxy_binary
from pykubeadm.testing.etcd import free_port


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_stop_ends_the_running_haproxy_and_cleans_up(tmp_path: Path) -> None:
    try:
        haproxy_binary()
    except KubeadmError:
        pytest.skip("haproxy is not installed")
    lb = LoadBalancer(tmp_path, "127.0.0.1", free_port())
    lb.apply({"cp": "127.0.0.2"})
    pid = lb.pid()
    try:
        assert pid is not None
        assert lb.stats_socket.exists()
        assert lb.stop(timeout=10.0) is True
        deadline = time.monotonic() + 10.0
        while not _gone(pid):
            assert time.monotonic() < deadline, f"haproxy {pid} still running after stop"
            time.sleep(0.05)
        assert not lb.pid_file.exists() and not lb.stats_socket.exists()
        assert lb.pid() is None
        assert lb.stop() is False  # nothing left to stop
    finally:
        if pid is not None and not _gone(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_external_etcd_stop_ends_a_member_that_ignores_sigterm(tmp_path: Path) -> None:
    ext = ExternalEtcd(tmp_path, "127.0.10.")
    ext.state.mkdir(parents=True)
    # a stand-in member: names itself like the lab's etcd and the lab dir, and ignores SIGTERM (so SIGKILL must follow)
    script = "trap '' TERM; echo up; while :; do sleep 0.1; done"
    proc = subprocess.Popen(
        ["sh", "-c", script, f"--name={ext.names[0]}", str(tmp_path)],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"  # the trap is set
        ext.pid_file(0).write_text(f"{proc.pid}\n")
        said: list[str] = []
        ext.stop(said.append, timeout=1.0)
        assert proc.wait(timeout=10.0) is not None
        assert said == ["[lab] stopped etcd member lab-etcd1"]
        assert not ext.pid_file(0).exists()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
