"""`pykubeadm reset` with real processes: the built-in kubelet and its static Pods, stray node processes, pid files."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import OFFLINE_SKIP, run_pykubeadm

from pykubeadm.kubelet.package import KUBELET_VERSION_FILE
from pykubeadm.layout import Layout
from pykubeadm.phases.kubeletservice import kubelet_pid
from pykubeadm.phases.reset.processes import node_processes
from pykubeadm.testing.etcd import etcd_available

BASE = ["--node-name", "node1", "--apiserver-advertise-address", "127.0.10.1", "--ignore-preflight-errors=all"]
SLEEPER = "import time\nwhile True: time.sleep(1)"


def _alive(proc: subprocess.Popen) -> bool:
    return proc.poll() is None


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen]]:
    procs: list[subprocess.Popen] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def _spawn(procs: list[subprocess.Popen], *args: str, session: bool = True) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", SLEEPER, *args], start_new_session=session)
    procs.append(p)
    return p


def _gone_or_zombie(pid: int) -> bool:
    """One read of /proc/PID/stat decides: no such process, or a zombie (state after the comm's closing paren)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _wait_gone(procs: list[subprocess.Popen], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        time.sleep(0.05)


def test_stops_the_pid_file_kubelet_and_stray_node_processes(tmp_path: Path, spawned: list) -> None:
    root = tmp_path / "node1"
    layout = Layout(root)
    (root / "etc/kubernetes").mkdir(parents=True)
    # a "kubelet" daemon recorded in the pid file (its command line names this node's root, as the real one does)
    kubelet = _spawn(spawned, "--root-dir", str(root), "component", "kubelet")
    layout.run_dir.mkdir(parents=True)
    layout.kubelet_pid_file.write_text(f"{kubelet.pid}\n")
    # a "static Pod" container left behind by a killed kubelet: its own session, a path under the root
    container = _spawn(spawned, f"--data-dir={root}/var/lib/etcd")
    sqlite = _spawn(spawned, f"--etcd-servers=sqlite://{root}/var/lib/pykubeadm/state.db")
    # not this node: another root sharing the prefix, and a non-session process merely mentioning the root
    other = _spawn(spawned, f"--data-dir={root}2/var/lib/etcd")
    viewer = _spawn(spawned, f"{root}/var/log/pykubeadm/kubelet.log", session=False)
    # until each child has exec'd, /proc shows the parent's command line: wait for the expected view, not a time
    expected = {kubelet.pid, container.pid, sqlite.pid}
    deadline = time.monotonic() + 30
    while (seen := set(node_processes(root))) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    assert seen == expected
    assert kubelet_pid(layout) == kubelet.pid

    res = run_pykubeadm("reset", "-f", root=root)
    assert res.returncode == 0, res.stderr
    _wait_gone([kubelet, container, sqlite], 5)
    assert not _alive(kubelet) and not _alive(container) and not _alive(sqlite)
    assert _alive(other) and _alive(viewer)
    assert not layout.kubelet_pid_file.exists()
    assert "[reset] Deleting the built-in control plane's state: [/var/run/pykubeadm]" in res.stdout


@pytest.mark.skipif(not etcd_available(), reason="needs the etcd binary")
def test_reset_after_offline_init_stops_the_control_plane_and_removes_every_file(
    tmp_path: Path, own_netns: list[str]
) -> None:
    # the node (kubeadm's default ports, a kubelet on every address) in a network namespace of the test's own
    root = tmp_path / "node1"
    res = run_pykubeadm("init", *BASE, f"--skip-phases={OFFLINE_SKIP}", root=root, netns=own_netns)
    assert res.returncode == 0, res.stderr
    layout = Layout(root)
    assert kubelet_pid(layout) is not None
    # wait until the kubelet runs its static Pods (etcd and the Python components)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(node_processes(root)) < 3:
        time.sleep(0.2)
    running = node_processes(root)
    assert len(running) >= 3, running

    res = run_pykubeadm("reset", "-f", root=root, netns=own_netns)
    assert res.returncode == 0, res.stderr
    assert node_processes(root) == []
    for pid in running:
        assert _gone_or_zombie(pid), pid
    # Everything kubeadm and the node wrote is gone; the installed kubelet's version stays, as a kubelet package
    # outlives `kubeadm reset` (pykubeadm.kubelet.package).
    installed = root / KUBELET_VERSION_FILE.lstrip("/")
    files = [p for p in root.rglob("*") if (p.is_file() or p.is_symlink()) and p != installed]
    assert files == [], files
    assert "[reset] Deleted contents of the etcd data directory: /var/lib/etcd" in res.stdout
    assert "[reset] Stopping the kubelet service" in res.stdout
