"""kubeadm's upgrade on an HA lab: three control planes (stacked etcd, HAProxy) and a worker made at v1.32.4, then
`lab upgrade v1.33.0` — `upgrade apply` on the first control plane, `upgrade node` on the others and the worker, one
at a time — while a client keeps asking the load balancer; every apiserver ends at v1.33.0 on upgraded etcd members
and the load balancer answered throughout."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from pykubeadm.lab.nodes import load_registry
from pykubeadm.layout import Layout
from pykubeadm.phases import etcdmember

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not all(os.access(p, os.X_OK) for p in ("/usr/sbin/haproxy", "/usr/bin/etcd")), reason="needs haproxy, etcd"
    ),
]

PREFIX = "127.0.38."
ENV = {**{k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}, "PYKUBEADM_LAB_ADDRESS_PREFIX": PREFIX}


def pykubeadm(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pykubeadm", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=ENV)


class Prober(threading.Thread):
    """GET /version through the load balancer every 200 ms; the longest time without an answer."""

    def __init__(self, ca: Path) -> None:
        super().__init__(daemon=True)
        self.ctx = ssl.create_default_context(cafile=str(ca))
        self.stop = threading.Event()
        self.ok = self.failed = 0
        self.longest_gap = 0.0

    def run(self) -> None:
        last = time.monotonic()
        while not self.stop.is_set():
            try:
                url = f"https://{PREFIX}250:6443/version"
                with urllib.request.urlopen(url, context=self.ctx, timeout=5) as r:
                    json.load(r)
                self.ok += 1
                now = time.monotonic()
                self.longest_gap = max(self.longest_gap, now - last)
                last = now
            except OSError:
                self.failed += 1
            self.stop.wait(0.2)


def test_upgrade_an_ha_cluster_while_it_serves(tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    try:
        res = pykubeadm(
            "lab", "up", "--topology", "loopback", "--dir", str(lab), "--control-planes", "3", "--workers", "1", "--datastore", "etcd",
            "--kubernetes-version", "v1.32.4",
        )  # fmt: skip
        assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
        nodes = load_registry(lab)
        assert nodes is not None
        cps = [n for n in nodes if n.control_plane]
        ca = Layout(cps[0].root).cert_path("ca")
        prober = Prober(ca)
        prober.start()
        res = pykubeadm("lab", "upgrade", "--dir", str(lab), "v1.33.0")
        prober.stop.set()
        prober.join()
        assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
        order = [
            line.split(":")[0]
            for line in res.stdout.splitlines()
            if "pykubeadm upgrade apply" in line or "pykubeadm upgrade node" in line
        ]
        assert order == ["[lab] lab-control-plane", "[lab] lab-control-plane2", "[lab] lab-control-plane3",
                         "[lab] lab-worker"]  # fmt: skip
        # the load balancer answered throughout: never more than a few seconds without an answer
        assert prober.ok > 20 and prober.longest_gap < 10, (prober.ok, prober.failed, prober.longest_gap)
        ctx = ssl.create_default_context(cafile=str(ca))
        for cp in cps:
            with urllib.request.urlopen(f"https://{cp.address}:6443/version", context=ctx, timeout=10) as r:
                assert json.load(r)["gitVersion"] == "v1.33.0", cp.name
            etcd = yaml.safe_load((cp.root / "etc/kubernetes/manifests/etcd.yaml").read_text())
            assert etcd["spec"]["containers"][0]["image"] == "registry.k8s.io/etcd:3.5.21-0"
        urls = [f"https://{cp.address}:2379" for cp in cps]
        members = etcdmember.list_members(Layout(cps[0].root), urls)
        assert sorted(m["name"] for m in members) == sorted(cp.name for cp in cps)
        admin = cps[1].root / "etc/kubernetes/admin.conf"
        out = subprocess.run(
            ["kubectl", "--kubeconfig", str(admin), "get", "nodes", "-o", "json"], capture_output=True, text=True
        )
        items = json.loads(out.stdout)["items"]
        assert all(
            any(c["type"] == "Ready" and c["status"] == "True" for c in i["status"]["conditions"]) for i in items
        )
        assert len(items) == 4
    finally:
        down = pykubeadm("lab", "down", "--dir", str(lab))
        assert down.returncode == 0, down.stderr[-2000:]
