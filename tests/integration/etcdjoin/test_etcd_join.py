"""`join --control-plane` with stacked etcd, for real: `init` on 127.0.40.1 (built-in mode, the real etcd static Pod),
`join --control-plane --certificate-key` on 127.0.40.2, then what etcd, kubectl and the second apiserver see, and
`reset -f` of the second node removing its member. Per-node settings come from each node's patches (see nodes.py)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.conftest import run_pykubeadm
from tests.integration.etcdjoin import nodes as n

from pykubeadm import constants as c
from pykubeadm.layout import Layout
from pykubeadm.phases import etcdmember
from pykubeadm.phases.reset.processes import node_processes
from pykubeadm.pki.certs import try_load_cert
from pykubeadm.pki.keys import public_key_pin
from pykubeadm.testing.etcd import etcd_available

pytestmark = pytest.mark.skipif(not etcd_available(), reason="needs the etcd binary")


def _flags(manifest: Path) -> dict[str, str]:
    pod = yaml.safe_load(manifest.read_text())
    out = {}
    for arg in pod["spec"]["containers"][0]["command"][1:]:
        k, _, v = arg.removeprefix("--").partition("=")
        out[k] = v
    return out


def _members(root: Path) -> list[dict[str, Any]]:
    """The member list through etcd's JSON gateway (no etcdctl on these machines), with the node's client cert."""
    urls = [f"https://{n.address(i)}:2379" for i in (1, 2)]
    return etcdmember.list_members(Layout(root), urls)


def _kubectl(kubeconfig: Path, *args: str, server: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = ["kubectl", "--kubeconfig", str(kubeconfig), *(["--server", server] if server else []), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def _eventually(fn: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            res = fn()
            if res:
                return res
            last = res
        except Exception as err:
            last = err
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s (last: {last})")
        time.sleep(0.3)


@pytest.fixture
def roots(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    cp1, cp2 = tmp_path / "cp1", tmp_path / "cp2"
    try:
        yield cp1, cp2
    finally:
        for root in (cp2, cp1):  # reverse order; the test resets cp2 itself, a second reset is harmless
            if root.exists():
                run_pykubeadm("reset", "-f", root=root)


def test_join_control_plane_with_stacked_etcd(tmp_path: Path, roots: tuple[Path, Path]) -> None:
    cp1, cp2 = roots
    p1, p2 = tmp_path / "cp1-patches", tmp_path / "cp2-patches"
    n.write_patches(p1, n.address(1), joining=False)
    n.write_patches(p2, n.address(2), joining=True)
    config = tmp_path / "cp1.yaml"
    config.write_text(yaml.safe_dump_all(n.init_config(p1), sort_keys=False))

    res = run_pykubeadm("init", "--config", str(config), "--upload-certs", root=cp1)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]

    ca_hash = public_key_pin(try_load_cert(Layout(cp1).pki_dir, c.CA_CERT_AND_KEY_BASE_NAME).public_key())
    # Without a node-ip the kubelet port check binds every address, and cp1's kubelet holds 127.0.40.1:10250 on this
    # shared machine: only that check is relaxed (the kubelet itself listens on 127.0.40.2, from the patches).
    join = [
        "join",
        f"{n.address(1)}:6443",
        "--token",
        n.TOKEN,
        "--discovery-token-ca-cert-hash",
        ca_hash,
        "--control-plane",
        "--certificate-key",
        n.CERTIFICATE_KEY,
        "--apiserver-advertise-address",
        n.address(2),
        "--node-name",
        n.name(2),
        "--patches",
        str(p2),
        "--ignore-preflight-errors=Port-10250",
    ]
    # dry-run first: the member is only described, etcd is not touched
    res = run_pykubeadm(*join, "--dry-run", root=cp2)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert f"[etcd] Would add etcd member: https://{n.address(2)}:2380" in res.stdout
    assert "[etcd] Would wait for the new etcd member to join the cluster" in res.stdout
    assert len(etcdmember.list_members(Layout(cp1), [f"https://{n.address(1)}:2379"])) == 1
    assert not Layout(cp2).manifest("etcd").exists()

    res = run_pykubeadm(*join, root=cp2)
    out = res.stdout
    assert res.returncode == 0, out[-3000:] + res.stderr[-3000:]
    lines = [
        "[etcd] Announced new etcd member joining to the existing etcd cluster",
        '[etcd] Creating static Pod manifest for "etcd"',
        "[etcd] Waiting for the new etcd member to join the cluster. This can take up to 40s",
        "* A new etcd member was added to the local/stacked etcd cluster.",
    ]
    positions = [out.find(line) for line in lines]
    assert -1 not in positions and positions == sorted(positions), out

    # etcd: two started voting members with the advertised peer URLs
    members = _members(cp2)
    assert sorted((m.get("name"), tuple(m.get("peerURLs") or ()), bool(m.get("isLearner"))) for m in members) == [
        (n.name(1), (f"https://{n.address(1)}:2380",), False),
        (n.name(2), (f"https://{n.address(2)}:2380",), False),
    ]

    # the joining member's manifest: an existing cluster with both members; its apiserver on its local member
    manifests = Layout(cp2).manifests_dir
    etcd = _flags(manifests / "etcd.yaml")
    assert etcd["initial-cluster-state"] == "existing"
    assert sorted(etcd["initial-cluster"].split(",")) == [
        f"{n.name(1)}=https://{n.address(1)}:2380",
        f"{n.name(2)}=https://{n.address(2)}:2380",
    ]
    assert etcd["listen-client-urls"] == f"https://{n.address(2)}:2379"
    assert _flags(manifests / "kube-apiserver.yaml")["etcd-servers"] == f"https://{n.address(2)}:2379"
    assert "initial-cluster-state" not in _flags(Layout(cp1).manifests_dir / "etcd.yaml")

    # kubectl (the real one) through cp2's admin.conf: both nodes, both control planes
    admin1, admin2 = Layout(cp1).admin_kubeconfig, Layout(cp2).admin_kubeconfig

    def nodes() -> dict[str, list[str]]:
        r = _kubectl(admin2, "get", "nodes", "-o", "json")
        assert r.returncode == 0, r.stderr
        items = json.loads(r.stdout)["items"]
        return {
            i["metadata"]["name"]: sorted(k for k in i["metadata"].get("labels", {}) if k.startswith("node-role"))
            for i in items
        }

    got = nodes()
    assert got == {
        n.name(1): ["node-role.kubernetes.io/control-plane"],
        n.name(2): ["node-role.kubernetes.io/control-plane"],
    }
    table = _kubectl(admin2, "get", "nodes")
    assert table.returncode == 0 and table.stdout.count("control-plane") == 2, table.stdout

    # data written through the first apiserver is served by the second (its own etcd member)
    r = _kubectl(admin1, "create", "configmap", "etcdjoin", "--from-literal=written=through-cp1")
    assert r.returncode == 0, r.stderr
    second = f"https://{n.address(2)}:6443"
    r = _eventually(
        lambda: (
            (res := _kubectl(admin2, "get", "configmap", "etcdjoin", "-o", "json", server=second)).returncode == 0
            and res
        ),
        30,
        "the second apiserver serving the ConfigMap",
    )
    assert json.loads(r.stdout)["data"] == {"written": "through-cp1"}

    # reset of cp2 removes its member and stops every process of the node
    res = run_pykubeadm("reset", "-f", root=cp2)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    left = etcdmember.list_members(Layout(cp1), [f"https://{n.address(1)}:2379"])
    assert [(m.get("name"), m.get("peerURLs")) for m in left] == [(n.name(1), [f"https://{n.address(1)}:2380"])]
    _eventually(lambda: node_processes(cp2) == [], 10, "no process of cp2 left")
    # the first node still works on its own
    r = _kubectl(admin1, "get", "configmap", "etcdjoin")
    assert r.returncode == 0, r.stderr
