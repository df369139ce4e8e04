"""The network-namespace lab end to end (`lab up --topology netns`): nodes in namespaces of their own on the lab's
bridge, reached from the host only through `<lab>/kubeconfig` (the relay on 127.0.0.1), `lab exec`, a NodePort
published with `--publish`, and `lab down` leaving the host as it found it."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from tests.e2e.test_lab import _kill_leftovers, _processes_under, pykubeadm

from pykubeadm.layout import Layout

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
]

WORKERS = ["lab-worker", "lab-worker2"]
NODES = ["lab-control-plane", *WORKERS]
NODE_PORT = 30080


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _out(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=30).stdout


def _host_state(lab_dir: Path) -> dict[str, set[str]]:
    """What the lab could leave in the host: named namespaces, links, nftables tables, mounts, its processes."""
    mounts = {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()}
    return {
        "netns": set(_out("ip", "netns", "list").split("\n")) - {""},
        "links": {line.split(":")[1].strip().split("@")[0] for line in _out("ip", "-o", "link").splitlines()},
        "addresses": set(re.findall(r"inet (\S+)", _out("ip", "-4", "-o", "addr"))),
        "nft": set(_out("nft", "list", "tables").splitlines()),
        "mounts": mounts,
        "processes": {str(p) for p in _processes_under(lab_dir)},
    }


@dataclass
class NetnsLab:
    dir: Path
    published: int
    before: dict[str, set[str]]
    up_output: str

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    def kubectl(self, *args: str) -> str:
        res = subprocess.run(
            ["kubectl", "--kubeconfig", str(self.kubeconfig), *args], capture_output=True, text=True, timeout=60
        )
        assert res.returncode == 0, f"kubectl {' '.join(args)}: {res.stderr}"
        return res.stdout

    def exec(self, node: str, *cmd: str) -> subprocess.CompletedProcess[str]:
        return pykubeadm("lab", "exec", "--dir", str(self.dir), node, "--", *cmd, timeout=60)

    def address(self, node: str) -> str:
        nodes = yaml.safe_load((self.dir / ".lab/nodes.yaml").read_text())["nodes"]
        return str(next(n["address"] for n in nodes if n["name"] == node))


@contextlib.contextmanager
def netns_lab_up(lab_dir: Path, *args: str, timeout: float = 240) -> Iterator[str]:
    """`lab up --topology netns ARGS` in `lab_dir` (its output), `lab down` after, whatever happened."""
    res = pykubeadm("lab", "up", "--dir", str(lab_dir), "--topology", "netns", *args, timeout=timeout)
    try:
        assert res.returncode == 0, f"lab up failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
        yield res.stdout
    finally:
        pykubeadm("lab", "down", "--dir", str(lab_dir))
        _kill_leftovers(lab_dir)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsLab]:
    lab_dir = tmp_path_factory.mktemp("netns") / "lab"
    before = _host_state(lab_dir)
    port = _free_port()
    with netns_lab_up(lab_dir, "--workers", "2", "--publish", f"{port}:{NODE_PORT}") as output:
        yield NetnsLab(lab_dir, port, before, output)


def test_lab_up_says_which_topology_it_built(lab: NetnsLab) -> None:
    lines = [line for line in lab.up_output.splitlines() if line.startswith("[lab] Topology:")]
    assert len(lines) == 1 and lines[0].startswith("[lab] Topology: netns"), lab.up_output[:2000]


def test_nodes_ready_on_lab_addresses_through_the_host_kubeconfig(lab: NetnsLab) -> None:
    config = yaml.safe_load(lab.kubeconfig.read_text())
    assert config["clusters"][0]["cluster"]["server"].startswith("https://127.0.0.1:")
    assert lab.kubeconfig.stat().st_mode & 0o777 == 0o600
    rows = [line.split() for line in lab.kubectl("get", "nodes", "-o", "wide", "--no-headers").splitlines()]
    assert {r[0]: r[1] for r in rows} == dict.fromkeys(NODES, "Ready")
    for r in rows:
        assert r[5] == lab.address(r[0]) and r[5].startswith("172.18."), r


def test_each_node_has_its_own_address_and_hostname(lab: NetnsLab) -> None:
    res = lab.exec("lab-worker", "ip", "-4", "-o", "addr")
    assert res.returncode == 0, res.stderr
    assert f"inet {lab.address('lab-worker')}/16" in res.stdout
    assert "127.0.10." not in res.stdout
    for node in NODES:
        res = lab.exec(node, "hostname")
        assert res.returncode == 0 and res.stdout.strip() == node, (node, res.stdout, res.stderr)


def test_nodes_keep_kubeadms_bind_addresses_and_no_hostname_override(lab: NetnsLab) -> None:
    """A node with a network of its own is configured as kubeadm configures a node (issue #41): the controller-manager
    and scheduler bind kubeadm's 127.0.0.1, and the kubelet gets no --hostname-override (its UTS namespace gives it
    the node's name)."""
    cp = Layout(lab.dir / "lab-control-plane")
    for component in ("kube-controller-manager", "kube-scheduler"):
        command = yaml.safe_load(cp.manifest(component).read_text())["spec"]["containers"][0]["command"]
        assert "--bind-address=127.0.0.1" in command, (component, command)
    for node in NODES:
        flags = Layout(lab.dir / node).kubelet_env_file.read_text()
        assert "--hostname-override" not in flags, (node, flags)


def test_every_process_of_a_node_runs_in_its_namespaces(lab: NetnsLab) -> None:
    from pykubeadm.phases.reset.processes import node_processes

    for node in NODES:
        ns = {kind: os.stat(lab.dir / ".lab/netns" / node / kind).st_ino for kind in ("net", "uts")}
        pids = node_processes(lab.dir / node)
        assert len(pids) >= 2, (node, pids)  # its kubelet and kube-proxy at least
        for pid in pids:
            try:
                net = os.stat(f"/proc/{pid}/ns/net").st_ino
            except FileNotFoundError:
                continue  # ended meanwhile
            assert net == ns["net"], (node, pid, Path(f"/proc/{pid}/cmdline").read_bytes()[:200])
        kubelet = int(Layout(lab.dir / node).kubelet_pid_file.read_text())
        assert os.stat(f"/proc/{kubelet}/ns/uts").st_ino == ns["uts"]  # (a container has a UTS namespace of its own)


def test_the_host_namespace_holds_no_lab_address_or_link(lab: NetnsLab) -> None:
    now = _host_state(lab.dir)
    assert not any(a.startswith("172.18.") for a in now["addresses"] - lab.before["addresses"])
    assert not {n for n in now["links"] - lab.before["links"] if n == "lab0" or n.startswith("veth")}


def test_kube_proxy_runs_nftables_in_each_node_and_service_ips_answer(lab: NetnsLab) -> None:
    dns = lab.kubectl("-n", "kube-system", "get", "service", "kube-dns", "-o", "jsonpath={.spec.clusterIP}")
    assert dns == "10.96.0.10"
    res = lab.exec("lab-worker", "nft", "list", "tables")
    assert "table ip kube-proxy" in res.stdout, res.stdout + res.stderr
    probe = "import socket; socket.create_connection(('10.96.0.1', 443), timeout=5).close(); print('ok')"
    deadline = time.monotonic() + 30
    while True:  # kube-proxy's first sync after the node's start
        res = lab.exec("lab-worker2", "python3", "-c", probe)
        if res.stdout.strip() == "ok" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert res.stdout.strip() == "ok", res.stderr


def test_kube_dns_answers_on_its_cluster_ip_inside_a_node(lab: NetnsLab) -> None:
    query = (
        "import dns.resolver; r = dns.resolver.Resolver(configure=False); r.nameservers = ['10.96.0.10']; "
        "print(r.resolve('kubernetes.default.svc.cluster.local', 'A', lifetime=5)[0])"
    )
    deadline = time.monotonic() + 30
    while True:  # CoreDNS may still be starting
        res = lab.exec("lab-worker", sys.executable, "-c", query)
        if res.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert res.stdout.strip() == "10.96.0.1", res.stderr[-1500:]


def test_a_published_node_port_answers_on_the_hosts_loopback(lab: NetnsLab) -> None:
    lab.kubectl(
        "create", "deployment", "web", "--image=python:3", "--port=8088", "--", "python3", "-m", "http.server", "8088"
    )
    lab.kubectl("create", "service", "nodeport", "web", "--tcp=80:8088", f"--node-port={NODE_PORT}")
    deadline = time.monotonic() + 60
    last: object = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{lab.published}/", timeout=3) as resp:
                assert resp.status == 200
                return
        except OSError as err:
            last = err
            time.sleep(0.3)
    pytest.fail(f"nothing answered on the published 127.0.0.1:{lab.published}: {last}")


def _wait_ready(lab: NetnsLab, node: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    status = ""
    while time.monotonic() < deadline:
        res = subprocess.run(
            ["kubectl", "--kubeconfig", str(lab.kubeconfig), "get", "node", node, "--no-headers"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        status = res.stdout.split()[1] if res.returncode == 0 and res.stdout.split() else res.stderr
        if status == "Ready":
            return
        time.sleep(0.3)
    pytest.fail(f"{node} is not Ready: {status}")


def test_stop_start_reset_and_join_again_keep_the_node_in_its_namespaces(lab: NetnsLab) -> None:
    for args in (["stop", "lab-worker2"], ["start", "lab-worker2"]):
        res = pykubeadm("lab", *args, "--dir", str(lab.dir))
        assert res.returncode == 0, res.stdout + res.stderr
    kubelet = int(Layout(lab.dir / "lab-worker2").kubelet_pid_file.read_text())
    worker_net = lab.dir / ".lab/netns/lab-worker2/net"
    assert os.stat(f"/proc/{kubelet}/ns/net").st_ino == os.stat(worker_net).st_ino
    _wait_ready(lab, "lab-worker2")
    res = pykubeadm("lab", "reset", "lab-worker2", "--dir", str(lab.dir))
    assert res.returncode == 0, res.stdout + res.stderr
    res = pykubeadm("lab", "join", "--dir", str(lab.dir), "--node", "lab-worker2")
    assert res.returncode == 0, res.stdout + res.stderr
    _wait_ready(lab, "lab-worker2")
    res = lab.exec("lab-worker2", "ip", "-4", "-o", "addr")
    assert f"inet {lab.address('lab-worker2')}/16" in res.stdout


def test_zz_lab_down_leaves_the_host_as_before(lab: NetnsLab) -> None:
    res = pykubeadm("lab", "down", "--dir", str(lab.dir))
    assert res.returncode == 0, res.stderr
    after = _host_state(lab.dir)
    assert not after["processes"], after["processes"]
    ours = str(lab.dir)
    assert not [m for m in after["mounts"] if m.startswith(ours)]
    assert not {n for n in after["links"] - lab.before["links"] if n == "lab0" or n.startswith("veth")}
    assert not {a for a in after["addresses"] - lab.before["addresses"] if a.startswith("172.18.")}
    assert after["nft"] - lab.before["nft"] == set()
    # the lab names no namespace in /run/netns at all; other tests of the project (pk-*) may come and go meanwhile
    assert {n for n in after["netns"] - lab.before["netns"] if not n.startswith("pk-")} == set()
    assert list(lab.dir.iterdir()) == []
