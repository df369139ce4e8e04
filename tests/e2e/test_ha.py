"""An HA lab end to end: three control planes with stacked etcd behind a real HAProxy, and one worker — one lab for
the whole module, the checks in order: bring-up (etcdctl's member list, Ready nodes, every kubeconfig on the load
balancer), one leader per elected component, losing the controller-manager leader's node (kubectl through HAProxy,
writes, leadership moving, a new worker joining, the node coming back), `lab status`, and reset + join again of one
control plane."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from pykubeadm.lab.loadbalancer import LoadBalancer
from pykubeadm.lab.status import lease_holder_node
from pykubeadm.phases.reset.processes import node_processes

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not all(os.access(p, os.X_OK) for p in ("/usr/sbin/haproxy", "/usr/bin/etcdctl", "/usr/bin/etcd")),
        reason="needs haproxy, etcd and etcdctl (scripts/setup.sh installs them)",
    ),
]

PREFIX = "127.0.33."
LB = f"{PREFIX}250:6443"
CPS = ["lab-control-plane", "lab-control-plane2", "lab-control-plane3"]


def pykubeadm(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    env["PYKUBEADM_LAB_ADDRESS_PREFIX"] = PREFIX
    return subprocess.run(
        [sys.executable, "-m", "pykubeadm", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def eventually(fn: Callable[[], Any], timeout: float, what: str, interval: float = 0.3) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            res = fn()
            if res:
                return res
            last = res
        except Exception as err:  # the condition may raise until it holds
            last = err
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s (last: {last!r})")
        time.sleep(interval)


def processes_naming(path: Path) -> list[int]:
    """Processes with an argument at or below `path` (a leak check, any process of a node)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            if any(a == str(path) or f"{path}/" in a for a in args):
                found.append(int(entry.name))
    return found


@dataclass
class Lab:
    dir: Path

    def root(self, node: str) -> Path:
        return self.dir / node

    def address(self, node: str) -> str:
        nodes = yaml.safe_load((self.dir / ".lab/nodes.yaml").read_text())["nodes"]
        return PREFIX + str(next(n["index"] for n in nodes if n["name"] == node) + 1)

    @property
    def admin(self) -> Path:
        return self.root("lab-control-plane2") / "etc/kubernetes/admin.conf"

    def kubectl(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", "--kubeconfig", str(self.admin), "--request-timeout=20s", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def lab(self, *args: str) -> subprocess.CompletedProcess[str]:
        return pykubeadm("lab", args[0], "--dir", str(self.dir), *args[1:])

    def members(self, via: str) -> list[dict[str, Any]]:
        """`etcdctl member list` against `via`'s member, with its healthcheck-client certificate."""
        pki = self.root(via) / "etc/kubernetes/pki/etcd"
        res = subprocess.run(
            [
                "etcdctl",
                f"--endpoints=https://{self.address(via)}:2379",
                f"--cacert={pki / 'ca.crt'}",
                f"--cert={pki / 'healthcheck-client.crt'}",
                f"--key={pki / 'healthcheck-client.key'}",
                "--command-timeout=5s",
                "member",
                "list",
                "-w",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=20,
            env={**os.environ, "ETCDCTL_API": "3"},
        )
        assert res.returncode == 0, res.stderr
        return list(json.loads(res.stdout)["members"])

    def started_members(self, via: str) -> list[str]:
        return sorted(m["name"] for m in self.members(via) if m.get("name") and m.get("clientURLs"))

    def ready_nodes(self) -> dict[str, bool]:
        r = self.kubectl("get", "nodes", "-o", "json")
        assert r.returncode == 0, r.stderr
        return {
            i["metadata"]["name"]: any(
                c["type"] == "Ready" and c["status"] == "True" for c in i["status"].get("conditions", [])
            )
            for i in json.loads(r.stdout)["items"]
        }

    def lease_holder(self, name: str) -> str:
        r = self.kubectl("-n", "kube-system", "get", "lease", name, "-o", "jsonpath={.spec.holderIdentity}")
        assert r.returncode == 0, r.stderr
        return r.stdout


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab_dir = tmp_path_factory.mktemp("ha") / "lab"
    lab = Lab(lab_dir)
    try:
        res = pykubeadm(
            "lab",
            "up",
            "--topology",
            "loopback",
            "--dir",
            str(lab_dir),
            "--control-planes",
            "3",
            "--workers",
            "1",
            "--datastore",
            "etcd",
        )
        assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
        yield lab
    finally:
        down = pykubeadm("lab", "down", "--dir", str(lab_dir))
        left = {n: node_processes(lab_dir / n) for n in (*CPS, "lab-worker", "lab-worker2")}
        left["any"] = processes_naming(lab_dir)
        lb_left = LoadBalancer(lab_dir / ".lab", f"{PREFIX}250").pid()
        assert down.returncode == 0, down.stderr[-2000:]
        assert not any(left.values()), f"processes left after lab down: {left}"
        assert lb_left is None, "HAProxy still running after lab down"


def test_bring_up_three_control_planes_behind_haproxy(lab: Lab) -> None:
    assert lab.started_members("lab-control-plane") == sorted(CPS)
    assert all(not m.get("isLearner") for m in lab.members("lab-control-plane3"))
    r = lab.kubectl("get", "nodes", "-o", "json")
    items = json.loads(r.stdout)["items"]
    roles = {
        i["metadata"]["name"]: "node-role.kubernetes.io/control-plane" in i["metadata"].get("labels", {}) for i in items
    }
    assert roles == {**dict.fromkeys(CPS, True), "lab-worker": False}
    assert all(lab.ready_nodes().values())
    # `--datastore etcd`: each control plane's etcd static Pod runs the real etcd, and its kubelet posts a mirror Pod
    for cp in CPS:
        etcd = yaml.safe_load((lab.root(cp) / "etc/kubernetes/manifests/etcd.yaml").read_text())
        assert etcd["spec"]["containers"][0]["command"][0] == "etcd", cp
    mirrors = {f"pod/etcd-{cp}" for cp in CPS}
    eventually(
        lambda: mirrors <= set(lab.kubectl("-n", "kube-system", "get", "pods", "-o", "name").stdout.split()),
        60,
        "the etcd mirror Pods listed",
    )

    def server(path: Path) -> str:
        return str(yaml.safe_load(path.read_text())["clusters"][0]["cluster"]["server"])

    lb_url = f"https://{LB}"
    for cp in CPS:
        kube = lab.root(cp) / "etc/kubernetes"
        assert server(kube / "admin.conf") == lb_url, cp
        # kubeadm points the controller-manager and the scheduler at their own apiserver (the local endpoint)
        local = f"https://{lab.address(cp)}:6443"
        assert server(kube / "controller-manager.conf") == local
        assert server(kube / "scheduler.conf") == local
    assert server(lab.root("lab-control-plane") / "etc/kubernetes/super-admin.conf") == lb_url
    assert server(lab.root("lab-worker") / "etc/kubernetes/kubelet.conf") == lb_url
    # what joining nodes discover: cluster-info, and the kube-proxy kubeconfig
    info = json.loads(lab.kubectl("-n", "kube-public", "get", "cm", "cluster-info", "-o", "json").stdout)
    assert yaml.safe_load(info["data"]["kubeconfig"])["clusters"][0]["cluster"]["server"] == lb_url
    proxy = json.loads(lab.kubectl("-n", "kube-system", "get", "cm", "kube-proxy", "-o", "json").stdout)
    assert yaml.safe_load(proxy["data"]["kubeconfig.conf"])["clusters"][0]["cluster"]["server"] == lb_url
    cfg = json.loads(lab.kubectl("-n", "kube-system", "get", "cm", "kubeadm-config", "-o", "json").stdout)
    assert yaml.safe_load(cfg["data"]["ClusterConfiguration"])["controlPlaneEndpoint"] == LB
    # HAProxy health-checks all three apiservers' /readyz and finds them up
    lb = LoadBalancer(lab.dir / ".lab", f"{PREFIX}250")
    eventually(lambda: {s.name: s.status for s in lb.show_stat()} == dict.fromkeys(CPS, "UP"), 30, "three servers UP")
    assert "option httpchk GET /readyz" in lb.config_file.read_text()


def test_one_leader_per_component_across_control_planes(lab: Lab) -> None:
    for component in ("kube-controller-manager", "kube-scheduler"):
        holder = eventually(lambda c=component: lab.lease_holder(c), 30, f"{component} lease held")
        assert holder.count("_") == 1  # <hostname>_<uuid>
        node = lease_holder_node(lab.dir, component)
        assert node in CPS
        # the others are waiting, not leading: exactly one node's component acquired the lease
        acquired = [
            cp
            for cp in CPS
            for log in (lab.root(cp) / "var/log/pods").glob(f"kube-system_{component}-{cp}_*/{component}/*.log")
            if f"successfully acquired lease kube-system/{component}" in log.read_text(errors="replace")
        ]
        assert acquired == [node], acquired


def test_losing_the_controller_manager_leader_node(lab: Lab) -> None:
    victim = lease_holder_node(lab.dir, "kube-controller-manager")
    assert victim in CPS
    old_holder = lab.lease_holder("kube-controller-manager")
    res = lab.lab("stop", victim)
    assert res.returncode == 0, res.stderr
    assert node_processes(lab.root(victim)) == [] and processes_naming(lab.root(victim)) == []
    # kubectl through HAProxy keeps answering, right away and every time; writes succeed (etcd keeps quorum)
    for i in range(5):
        r = lab.kubectl("get", "nodes")
        assert r.returncode == 0, r.stderr
        r = lab.kubectl("create", "configmap", f"written-{i}", "--from-literal=while=node-down")
        assert r.returncode == 0, r.stderr
    survivor = next(cp for cp in CPS if cp != victim)
    assert len(lab.started_members(survivor)) == 3  # still members; the victim's is unreachable
    # leadership moves to a live control plane within the lease duration (+ retry period, generous on 2 cores)
    eventually(lambda: lab.lease_holder("kube-controller-manager") != old_holder, 90, "controller-manager lease moved")
    new_leader = lease_holder_node(lab.dir, "kube-controller-manager")
    assert new_leader in CPS and new_leader != victim
    # a new worker joins: its CSR is approved and signed by the new leader
    res = lab.lab("join")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    csrs = json.loads(lab.kubectl("get", "csr", "-o", "json").stdout)["items"]

    def common_name(csr: dict[str, Any]) -> str:
        req = x509.load_pem_x509_csr(base64.b64decode(csr["spec"]["request"]))
        return str(req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)

    mine = [c for c in csrs if common_name(c) == "system:node:lab-worker2"]
    assert mine, [common_name(c) for c in csrs]
    assert all(c["spec"]["username"].startswith("system:bootstrap:") for c in mine)
    assert any(cd["type"] == "Approved" for c in mine for cd in c["status"].get("conditions", []))
    cert = x509.load_pem_x509_certificate(base64.b64decode(mine[-1]["status"]["certificate"]))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:lab-worker2"
    assert lab.ready_nodes()["lab-worker2"]
    # the node comes back: its kubelet restarts its static Pods, its etcd member rejoins, it is Ready
    res = lab.lab("start", victim)
    assert res.returncode == 0, res.stderr
    lb = LoadBalancer(lab.dir / ".lab", f"{PREFIX}250")
    eventually(lambda: {s.name: s.status for s in lb.show_stat()}.get(victim) == "UP", 120, f"{victim} UP in HAProxy")
    eventually(lambda: lab.ready_nodes().get(victim), 120, f"{victim} Ready")
    r = lab.kubectl("--server", f"https://{lab.address(victim)}:6443", "get", "configmap", "written-4", "-o", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["data"] == {"while": "node-down"}, r.stderr


def test_lab_status_shows_apiservers_etcd_leadership_and_the_load_balancer(lab: Lab) -> None:
    def rows() -> dict[str, list[str]]:
        res = lab.lab("status")
        assert res.returncode == 0, res.stderr
        section = res.stdout.split("CONTROL PLANE", 1)[1].splitlines()[1:]
        return {line.split()[0]: line.split() for line in section if line.strip()}

    def settled() -> dict[str, list[str]] | None:
        r = rows()
        ok = set(r) == set(CPS) and all(v[1] == "ok" and v[-1].startswith("(L7OK)") for v in r.values())
        return r if ok and sorted(v[2] for v in r.values()) == ["follower", "follower", "leader"] else None

    r = eventually(settled, 60, "every control plane ok, one etcd leader")
    leads = [v[3] for v in r.values() if v[3] != "-"]
    assert sorted(",".join(leads).split(",")) == ["kube-controller-manager", "kube-scheduler"]
    assert "HAProxy pid" in lab.lab("status").stdout


def test_reset_a_control_plane_then_join_it_again(lab: Lab) -> None:
    node = "lab-control-plane3"
    res = lab.lab("reset", node)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert lab.started_members("lab-control-plane") == sorted(set(CPS) - {node})
    pki = lab.root("lab-control-plane") / "etc/kubernetes/pki/etcd"
    health = subprocess.run(
        [
            "etcdctl",
            f"--endpoints=https://{lab.address('lab-control-plane')}:2379,https://{lab.address('lab-control-plane2')}:2379",
            f"--cacert={pki / 'ca.crt'}",
            f"--cert={pki / 'healthcheck-client.crt'}",
            f"--key={pki / 'healthcheck-client.key'}",
            "endpoint",
            "health",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "ETCDCTL_API": "3"},
    )
    assert health.returncode == 0, health.stdout + health.stderr
    lb = LoadBalancer(lab.dir / ".lab", f"{PREFIX}250")
    assert node not in {s.name for s in lb.show_stat()}
    assert node not in lab.ready_nodes()
    assert lab.kubectl("create", "configmap", "after-reset").returncode == 0
    res = lab.lab("join", "--node", node)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert lab.started_members("lab-control-plane") == sorted(CPS)
    assert lab.ready_nodes().get(node)
    eventually(lambda: {s.name: s.status for s in lb.show_stat()}.get(node) == "UP", 60, f"{node} UP in HAProxy")
