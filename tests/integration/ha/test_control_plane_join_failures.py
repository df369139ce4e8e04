"""A second control plane that cannot join, against a real one-control-plane HA lab (stacked etcd, HAProxy as the
controlPlaneEndpoint, certificates uploaded): a wrong certificate key, a kubeadm-certs Secret gone with its 2 h owner
token (expired here, then removed by the token cleaner and the garbage collector), and a cluster without a
controlPlaneEndpoint. Each fails with kubeadm's explanation and leaves the joining node's root empty. And
`lab join --control-plane` past the Secret's expiry uploads the certificates again, as kubeadm's message says."""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykubeadm.lab.loadbalancer import LoadBalancer
from pykubeadm.layout import Layout
from pykubeadm.phases.reset.processes import node_processes
from pykubeadm.pki.certs import try_load_cert
from pykubeadm.pki.keys import public_key_pin
from pykubeadm.testing.etcd import etcd_available

pytestmark = pytest.mark.skipif(
    not etcd_available() or not os.access("/usr/sbin/haproxy", os.X_OK), reason="needs etcd and haproxy"
)

PREFIX = "127.0.34."
ENDPOINT = f"{PREFIX}250:6443"
JOINING = f"{PREFIX}9"


def _run(*args: str, root: Path | None = None, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    env["PYKUBEADM_LAB_ADDRESS_PREFIX"] = PREFIX
    cmd = [sys.executable, "-m", "pykubeadm", *(["--root-dir", str(root)] if root else []), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


class Cluster:
    def __init__(self, lab_dir: Path) -> None:
        self.dir = lab_dir
        self.cp = lab_dir / "lab-control-plane"
        self.key = (lab_dir / ".lab/certificate-key").read_text().strip()
        docs = list(yaml.safe_load_all((lab_dir / ".lab/lab-control-plane.yaml").read_text()))
        self.token = docs[0]["bootstrapTokens"][0]["token"]
        ca = try_load_cert(Layout(self.cp).pki_dir, "ca")
        assert ca is not None
        self.ca_hash = public_key_pin(ca.public_key())  # type: ignore[arg-type]

    def kubectl(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        admin = Layout(self.cp).admin_kubeconfig
        return subprocess.run(
            ["kubectl", "--kubeconfig", str(admin), *args], capture_output=True, text=True, timeout=30, input=input
        )

    def join_control_plane(self, root: Path, key: str) -> subprocess.CompletedProcess[str]:
        """The command `init` printed, on a new node (its own address and name; the kubelet port check relaxed: the
        first node's kubelet holds 10250 on a wildcard-probing check on this shared machine)."""
        return _run(
            "join",
            ENDPOINT,
            "--token",
            self.token,
            "--discovery-token-ca-cert-hash",
            self.ca_hash,
            "--control-plane",
            "--certificate-key",
            key,
            "--apiserver-advertise-address",
            JOINING,
            "--node-name",
            "lab-joining",
            "--ignore-preflight-errors=Port-10250",
            root=root,
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    lab_dir = tmp_path_factory.mktemp("ha-join") / "lab"
    try:
        res = _run(
            "lab", "up", "--topology", "loopback", "--dir", str(lab_dir), "--control-planes", "1", "--workers", "0", "--datastore", "etcd",
            "--load-balancer",
        )  # fmt: skip
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        yield Cluster(lab_dir)
    finally:
        down = _run("lab", "down", "--dir", str(lab_dir))
        assert down.returncode == 0, down.stderr[-2000:]
        assert node_processes(lab_dir / "lab-control-plane") == []
        assert node_processes(lab_dir / "lab-control-plane2") == []
        assert LoadBalancer(lab_dir / ".lab", f"{PREFIX}250").pid() is None


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if not p.is_dir()] if root.exists() else []


def _assert_failed(res: subprocess.CompletedProcess[str], root: Path, phase: str, *explanation: str) -> None:
    assert res.returncode != 0, res.stdout
    assert f"error execution phase {phase}:" in res.stderr, res.stderr
    for text in explanation:
        assert text in res.stderr, res.stderr
    assert _files(root) == [], "the failed join left files behind"
    assert node_processes(root) == []


def test_wrong_certificate_key(cluster: Cluster, tmp_path: Path) -> None:
    root = tmp_path / "node"
    res = cluster.join_control_plane(root, secrets.token_hex(32))
    _assert_failed(res, root, "control-plane-prepare/download-certs", "the certificate key is wrong")
    assert '[download-certs] Downloading the certificates in Secret "kubeadm-certs"' in res.stdout
    # not a key at all: refused by validation, before anything is asked or written
    res = cluster.join_control_plane(root, "not-hex")
    assert res.returncode != 0
    assert 'controlPlane.certificateKey: Invalid value: "not-hex"' in res.stderr, res.stderr
    assert _files(root) == []


def test_kubeadm_certs_gone_with_its_expired_owner_token(cluster: Cluster, tmp_path: Path) -> None:
    owner = json.loads(cluster.kubectl("-n", "kube-system", "get", "secret", "kubeadm-certs", "-o", "json").stdout)[
        "metadata"
    ]["ownerReferences"][0]
    token = json.loads(cluster.kubectl("-n", "kube-system", "get", "secret", owner["name"], "-o", "json").stdout)
    desc = base64.b64decode(token["data"]["description"]).decode()
    assert desc == "Proxy for managing TTL for the kubeadm-certs secret"
    # two hours later: the token's expiration is in the past; the token cleaner deletes it, the GC its dependent
    past = base64.b64encode(b"2000-01-01T00:00:00Z").decode()
    patch = json.dumps({"data": {"expiration": past}})
    r = cluster.kubectl("-n", "kube-system", "patch", "secret", owner["name"], "-p", patch)
    assert r.returncode == 0, r.stderr
    deadline = time.monotonic() + 120
    while cluster.kubectl("-n", "kube-system", "get", "secret", "kubeadm-certs").returncode == 0:
        assert time.monotonic() < deadline, "kubeadm-certs still there 120 s after its owner token expired"
        time.sleep(0.5)
    root = tmp_path / "node"
    res = cluster.join_control_plane(root, cluster.key)
    _assert_failed(
        res,
        root,
        "control-plane-prepare/download-certs",
        'Secret "kubeadm-certs" was not found in the "kube-system" Namespace. This Secret might have expired.',
        "kubeadm init phase upload-certs --upload-certs",
    )


def test_lab_join_control_plane_uploads_the_expired_certificates_again(cluster: Cluster) -> None:
    """After the previous test the kubeadm-certs Secret is gone: `lab join --control-plane` uploads the certificates
    again (kubeadm's `init phase upload-certs --upload-certs`) with the lab's key, and the control plane joins."""
    assert cluster.kubectl("-n", "kube-system", "get", "secret", "kubeadm-certs").returncode != 0
    res = _run("lab", "join", "--dir", str(cluster.dir), "--control-plane")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert 'The "kubeadm-certs" Secret has expired: uploading the certificates again' in res.stdout
    assert cluster.kubectl("-n", "kube-system", "get", "secret", "kubeadm-certs").returncode == 0
    nodes = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == ["lab-control-plane", "lab-control-plane2"]
    lb = LoadBalancer(cluster.dir / ".lab", f"{PREFIX}250")
    assert sorted(s.name for s in lb.show_stat()) == ["lab-control-plane", "lab-control-plane2"]


def test_second_control_plane_without_control_plane_endpoint(cluster: Cluster, tmp_path: Path) -> None:
    """A cluster made without controlPlaneEndpoint (kubeadm-config without it) takes no second control plane."""
    cm = json.loads(cluster.kubectl("-n", "kube-system", "get", "cm", "kubeadm-config", "-o", "json").stdout)
    cfg: dict[str, Any] = yaml.safe_load(cm["data"]["ClusterConfiguration"])
    cfg.pop("controlPlaneEndpoint")
    patch = json.dumps({"data": {"ClusterConfiguration": yaml.safe_dump(cfg)}})
    assert cluster.kubectl("-n", "kube-system", "patch", "cm", "kubeadm-config", "-p", patch).returncode == 0
    root = tmp_path / "node"
    res = cluster.join_control_plane(root, cluster.key)
    assert res.returncode != 0
    assert (
        "unable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint "
        "address"
    ) in res.stderr, res.stderr
    assert _files(root) == [] and node_processes(root) == []
