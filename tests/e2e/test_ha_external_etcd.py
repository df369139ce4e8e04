"""An HA lab on an external etcd: a 3-member etcd cluster with its own CA (kubeadm's external-etcd certificate
layout), three control planes with `etcd.external`, HAProxy, one worker; etcdctl's member list, a write through the
load balancer read back from every apiserver, and `lab down` stopping the etcd members by their pid files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pykubeadm.lab.externaletcd import ExternalEtcd
from pykubeadm.lab.loadbalancer import LoadBalancer
from pykubeadm.lab.nodes import load_registry
from pykubeadm.phases.reset.processes import node_processes
from pykubeadm.util.procstat import is_running

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not all(os.access(p, os.X_OK) for p in ("/usr/sbin/haproxy", "/usr/bin/etcdctl", "/usr/bin/etcd")),
        reason="needs haproxy, etcd and etcdctl (scripts/setup.sh installs them)",
    ),
]

PREFIX = "127.0.36."
CPS = ["lab-control-plane", "lab-control-plane2", "lab-control-plane3"]
ETCD = [f"https://{PREFIX}{o}:2379" for o in (241, 242, 243)]
ENV = {**{k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}, "PYKUBEADM_LAB_ADDRESS_PREFIX": PREFIX}


def pykubeadm(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pykubeadm", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=ENV)


@pytest.fixture(scope="module")
def lab_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    lab_dir = tmp_path_factory.mktemp("ha-ext") / "lab"
    try:
        res = pykubeadm(
            "lab", "up", "--topology", "loopback", "--dir", str(lab_dir), "--control-planes", "3", "--workers", "1",
            "--datastore", "external-etcd",
        )  # fmt: skip
        assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
        yield lab_dir
    finally:
        etcd_pids = [ExternalEtcd(lab_dir)._pid(i) for i in range(3)]
        down = pykubeadm("lab", "down", "--dir", str(lab_dir))
        assert down.returncode == 0, down.stderr[-2000:]
        assert not any(is_running(pid) for pid in etcd_pids if pid)  # gone or a zombie: one read of /proc each
        assert [ExternalEtcd(lab_dir)._pid(i) for i in range(3)] == [None, None, None]
        assert LoadBalancer(lab_dir / ".lab", f"{PREFIX}250").pid() is None
        assert not any(node_processes(lab_dir / n) for n in (*CPS, "lab-worker"))


def test_external_etcd_bring_up_member_list_and_a_write(lab_dir: Path) -> None:
    cp1 = lab_dir / "lab-control-plane/etc/kubernetes"
    # etcdctl, as the apiserver: the etcd CA and the apiserver-etcd-client pair copied to the first control plane
    res = subprocess.run(
        [
            "etcdctl",
            f"--endpoints={','.join(ETCD)}",
            f"--cacert={cp1 / 'pki/etcd/ca.crt'}",
            f"--cert={cp1 / 'pki/apiserver-etcd-client.crt'}",
            f"--key={cp1 / 'pki/apiserver-etcd-client.key'}",
            "member",
            "list",
            "-w",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "ETCDCTL_API": "3"},
    )
    assert res.returncode == 0, res.stderr
    members = json.loads(res.stdout)["members"]
    assert sorted(m["name"] for m in members if m.get("clientURLs")) == ["lab-etcd1", "lab-etcd2", "lab-etcd3"]
    # kubeadm's external-etcd layout: no etcd CA key and no etcd static Pod on the control planes
    for cp in CPS:
        kube = lab_dir / cp / "etc/kubernetes"
        assert not (kube / "manifests/etcd.yaml").exists()
        assert not (kube / "pki/etcd/ca.key").exists()
        pod = yaml.safe_load((kube / "manifests/kube-apiserver.yaml").read_text())
        flags = dict(a.removeprefix("--").split("=", 1) for a in pod["spec"]["containers"][0]["command"][1:])
        assert flags["etcd-servers"] == ",".join(ETCD)
        assert flags["etcd-cafile"] == "/etc/kubernetes/pki/etcd/ca.crt"
        assert flags["etcd-certfile"] == "/etc/kubernetes/pki/apiserver-etcd-client.crt"
        # the joining control planes got the external etcd files from the kubeadm-certs Secret
        assert (kube / "pki/apiserver-etcd-client.crt").read_bytes() == (
            cp1 / "pki/apiserver-etcd-client.crt"
        ).read_bytes()
    kubectl = ["kubectl", "--kubeconfig", str(cp1 / "admin.conf"), "--request-timeout=20s"]
    cfg = json.loads(
        subprocess.run(
            [*kubectl, "-n", "kube-system", "get", "cm", "kubeadm-config", "-o", "json"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    )
    external = yaml.safe_load(cfg["data"]["ClusterConfiguration"])["etcd"]["external"]
    assert external["endpoints"] == ETCD
    # one write through the load balancer, read back from every apiserver
    r = subprocess.run(
        [*kubectl, "create", "configmap", "external", "--from-literal=etcd=external"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    registry = load_registry(lab_dir)
    assert registry is not None
    for node in (n for n in registry if n.control_plane):
        r = subprocess.run(
            [*kubectl, "--server", f"https://{node.address}:6443", "get", "configmap", "external", "-o", "json"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["data"] == {"etcd": "external"}
    nodes = json.loads(subprocess.run([*kubectl, "get", "nodes", "-o", "json"], capture_output=True, text=True).stdout)
    ready = {
        n["metadata"]["name"]: any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
        for n in nodes["items"]
    }
    assert ready == dict.fromkeys([*CPS, "lab-worker"], True)
