"""An HA lab in the network-namespace topology: 3 control planes (stacked etcd) + 1 worker, HAProxy on the lab
network in a namespace of its own (kind's external load balancer node), the host reaching it only through
`<lab>/kubeconfig`; with the first control plane's processes frozen, kubectl and a new `lab join` still work."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.test_ha import eventually
from tests.e2e.test_lab import _processes_under, pykubeadm
from tests.e2e.test_lab_netns import netns_lab_up

from pykubeadm.lab.settings import load_balancer

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
]


def _kubectl(lab_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(lab_dir / "kubeconfig"), "--request-timeout=20s", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    lab_dir = tmp_path_factory.mktemp("netns-ha") / "lab"
    with netns_lab_up(lab_dir, "--control-planes", "3", "--workers", "1", "--datastore", "etcd", timeout=420):
        yield lab_dir


def test_every_node_ready_through_the_host_kubeconfig(lab: Path) -> None:
    res = _kubectl(lab, "get", "nodes", "--no-headers")
    assert res.returncode == 0, res.stderr
    rows = {line.split()[0]: line.split()[1] for line in res.stdout.splitlines()}
    assert rows == dict.fromkeys(
        ["lab-control-plane", "lab-control-plane2", "lab-control-plane3", "lab-worker"], "Ready"
    )


def test_haproxy_is_a_node_of_the_lab_network(lab: Path) -> None:
    net = lab / ".lab/netns/lab-external-load-balancer/net"
    res = subprocess.run(["nsenter", f"--net={net}", "ip", "-4", "-o", "addr"], capture_output=True, text=True)
    assert "inet 172.18.1.250/16" in res.stdout, res.stdout + res.stderr
    pid = int((lab / ".lab/haproxy.pid").read_text().split()[0])
    assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(net).st_ino


def _servers(lab_dir: Path) -> dict[str, str]:
    """HAProxy's view of each apiserver (UP, DOWN, "UP 1/2" …), from its stats socket."""
    lb = load_balancer(lab_dir)
    assert lb is not None
    return {s.name: s.status for s in lb.show_stat()}


def test_with_the_first_control_plane_frozen_kubectl_and_a_join_work(lab: Path) -> None:
    """The first control plane's processes frozen (SIGSTOP: its sockets still accept, nothing answers); its etcd member
    is the first one, the leader. Until HAProxy's check (inter 1s, fall 3, timeout check 2s) takes its apiserver out,
    a request may be routed there and hang; until the two live members have elected a leader, every apiserver's
    /readyz fails its etcd check (kube-apiserver's, too: a quorum read). Both are bounded: wait for them, then kubectl
    works every time and a worker joins."""
    from pykubeadm.phases.reset.processes import node_processes

    frozen = node_processes(lab / "lab-control-plane")
    assert frozen
    servers = {"lab-control-plane": "DOWN", "lab-control-plane2": "UP", "lab-control-plane3": "UP"}
    for pid in frozen:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    try:

        def taken_out() -> bool:
            now = _servers(lab)
            assert now == servers, now
            return True

        eventually(taken_out, 120, "HAProxy: the frozen apiserver DOWN, the live ones UP")

        def ready() -> bool:
            res = _kubectl(lab, "get", "--raw", "/readyz?verbose")
            assert res.returncode == 0, res.stderr
            return True

        eventually(ready, 120, "/readyz through the load balancer (the live etcd members have a leader)")
        for i in range(3):  # reads and writes, every time
            res = _kubectl(lab, "get", "nodes", "--no-headers")
            assert res.returncode == 0 and "lab-control-plane " in res.stdout, res.stderr
            res = _kubectl(lab, "create", "configmap", f"written-while-frozen-{i}")
            assert res.returncode == 0, res.stderr
        joined = pykubeadm("lab", "join", "--dir", str(lab), timeout=240)
        assert joined.returncode == 0, joined.stdout[-2000:] + joined.stderr[-2000:]
        res = _kubectl(lab, "get", "node", "lab-worker2", "--no-headers")
        assert res.returncode == 0 and res.stdout.split()[1] == "Ready", res.stdout + res.stderr
    finally:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def test_zz_lab_down_leaves_no_namespace_mount_or_process(lab: Path) -> None:
    res = pykubeadm("lab", "down", "--dir", str(lab))
    assert res.returncode == 0, res.stderr
    assert not _processes_under(lab)
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    assert not [m for m in mounts if m.startswith(str(lab))]
    assert list(lab.iterdir()) == []
