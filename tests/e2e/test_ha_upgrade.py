"""kubeadm's upgrade procedure on an HA lab (issue #41): three control planes (stacked etcd, HAProxy) and two workers
made at v1.32.4 have v1.32.4 kubelets; `lab upgrade v1.33.0` takes each node in turn — `upgrade apply` on the first
control plane, `upgrade node` on the others and the workers — through drain, the kubelet upgrade and restart,
uncordon, while a client keeps asking the load balancer and a Deployment guarded by a PodDisruptionBudget keeps at
least its budget's Pods ready (sampled every 0.5 s with the official Python client). Afterwards every apiserver and
kubelet is v1.33.0 on upgraded etcd members, no node is cordoned and `upgrade plan` has nothing left to do. One lab for
both: the HA upgrade and the per-node procedure are the same `lab upgrade`."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.e2e.test_lab import Lab, _kill_leftovers
from tests.e2e.test_pods import wait_for
from tests.e2e.test_workloads import apply, deployment

from pykubeadm.lab.nodes import LabNode, load_registry
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
CONTROL_PLANES = ["lab-control-plane", "lab-control-plane2", "lab-control-plane3"]
WORKERS = ["lab-worker", "lab-worker2"]
NODES = [*CONTROL_PLANES, *WORKERS]  # also the order `lab upgrade` takes them in


def pykubeadm(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pykubeadm", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab_dir = tmp_path_factory.mktemp("ha-upgrade")
    try:
        res = pykubeadm(
            "lab", "up", "--topology", "loopback", "--dir", str(lab_dir), "--control-planes", "3", "--workers", "2",
            "--datastore", "etcd", "--kubernetes-version", "v1.32.4",
        )  # fmt: skip
        assert res.returncode == 0, f"lab up failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
        yield Lab(lab_dir)
    finally:
        down = pykubeadm("lab", "down", "--dir", str(lab_dir))
        left = _kill_leftovers(lab_dir)
        assert down.returncode == 0, down.stderr[-2000:]
        assert not left, f"lab down left processes running: {left}"


def nodes(lab: Lab) -> list[dict[str, Any]]:
    return list(json.loads(lab.kubectl("get", "nodes", "-o", "json").stdout)["items"])


def control_planes(lab: Lab) -> list[LabNode]:
    registry = load_registry(lab.dir)
    assert registry is not None
    return [n for n in registry if n.control_plane]


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


class Sampler(threading.Thread):
    """Every 0.5 s: the Deployment's readyReplicas and its Ready Pods not being deleted (official client)."""

    def __init__(self, kubeconfig: Path) -> None:
        super().__init__(daemon=True)
        from kubernetes import client, config

        api = config.new_client_from_config(config_file=str(kubeconfig))
        self.apps = client.AppsV1Api(api)
        self.core = client.CoreV1Api(api)
        self.stop = threading.Event()
        self.samples: list[tuple[int, int]] = []
        self.unanswered = 0

    def run(self) -> None:
        while not self.stop.wait(0.5):
            try:
                dep = self.apps.read_namespaced_deployment("web", "default")
                pods = self.core.list_namespaced_pod("default", label_selector="app=web").items
            except Exception:  # an API server restarts with its node's kubelet: no answer is not an answer
                self.unanswered += 1
                continue
            ready = [
                p
                for p in pods
                if p.metadata.deletion_timestamp is None
                and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
            ]
            self.samples.append((dep.status.ready_replicas or 0, len(ready)))


def test_lab_up_at_an_older_version_has_kubelets_of_that_version(lab: Lab) -> None:
    items = nodes(lab)
    assert sorted(n["metadata"]["name"] for n in items) == sorted(NODES)
    assert {n["metadata"]["name"]: n["status"]["nodeInfo"]["kubeletVersion"] for n in items} == dict.fromkeys(
        NODES, "v1.32.4"
    )
    version = json.loads(lab.kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
    assert version == "v1.32.4"


def test_upgrade_an_ha_cluster_while_it_serves_node_by_node_with_the_budget_held(lab: Lab) -> None:
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "web"}}},
    }
    apply(lab, deployment("web", 4), budget)

    def four_ready() -> bool:
        dep = json.loads(lab.kubectl("get", "deployment", "web", "-o", "json").stdout)
        pdb = json.loads(lab.kubectl("get", "pdb", "web", "-o", "json").stdout)
        return (dep.get("status") or {}).get("readyReplicas") == 4 and (pdb.get("status") or {}).get(
            "disruptionsAllowed"
        ) == 1

    wait_for(four_ready, 120, "4 ready replicas and a budget allowing 1 disruption", interval=0.5)

    cps = control_planes(lab)
    ca = Layout(cps[0].root).cert_path("ca")
    prober = Prober(ca)
    sampler = Sampler(lab.admin)
    prober.start()
    sampler.start()
    try:
        res = pykubeadm("lab", "upgrade", "--dir", str(lab.dir), "v1.33.0")
    finally:
        for thread in (prober, sampler):
            thread.stop.set()
            thread.join()
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    out = res.stdout.splitlines()

    # `upgrade apply` on the first control plane, `upgrade node` on every other node, one at a time
    order = [
        line.split(":")[0] for line in out if "pykubeadm upgrade apply" in line or "pykubeadm upgrade node" in line
    ]
    assert order == [f"[lab] {name}" for name in NODES], res.stdout[-6000:]

    # the plan the operator reads first lists every kubelet still to upgrade by hand
    plan = [line.split() for line in out if line.strip().startswith("kubelet ")]
    assert plan == [["kubelet", name, "v1.32.4", "v1.33.0"] for name in NODES]

    # each node in turn: its kubeadm step, drain, the kubelet, uncordon — the next node only after
    def index(text: str) -> int:
        found = [i for i, line in enumerate(out) if text in line]
        assert found, f"{text!r} not in the output:\n{res.stdout[-6000:]}"
        return found[0]

    steps = []
    for name in NODES:
        kubeadm = "upgrade apply v1.33.0" if name == CONTROL_PLANES[0] else "upgrade node"
        steps += [
            index(f"[lab] {name}: pykubeadm {kubeadm}"),
            index(f"[lab] {name}: node/{name} cordoned"),
            index(f"[lab] {name}: node/{name} drained"),
            index(f"[lab] {name}: upgrading the kubelet package v1.32.4 -> v1.33.0"),
            index(f"[lab] {name}: Node Ready, kubelet v1.33.0"),
            index(f"[lab] {name}: node/{name} uncordoned"),
        ]
    assert steps == sorted(steps), res.stdout[-6000:]
    evicted = [line for line in out if "pod/web-" in line and line.endswith(" evicted")]
    assert len(evicted) >= 2, res.stdout[-6000:]  # the workers' web Pods went through the Eviction API
    assert any("evicting pod default/web-" in line for line in out)

    # the load balancer answered throughout: never more than a few seconds without an answer
    assert prober.ok > 20 and prober.longest_gap < 10, (prober.ok, prober.failed, prober.longest_gap)
    # the budget held: never fewer than 3 ready replicas while the nodes were drained one after another
    assert len(sampler.samples) >= 20, (len(sampler.samples), sampler.unanswered)
    assert min(min(s) for s in sampler.samples) >= 3, sampler.samples

    # every apiserver at v1.33.0, on etcd members of the new version, all three still members
    ctx = ssl.create_default_context(cafile=str(ca))
    for cp in cps:
        with urllib.request.urlopen(f"https://{cp.address}:6443/version", context=ctx, timeout=10) as r:
            assert json.load(r)["gitVersion"] == "v1.33.0", cp.name
        etcd = yaml.safe_load((cp.root / "etc/kubernetes/manifests/etcd.yaml").read_text())
        assert etcd["spec"]["containers"][0]["image"] == "registry.k8s.io/etcd:3.5.21-0"
    urls = [f"https://{cp.address}:2379" for cp in cps]
    members = etcdmember.list_members(Layout(cps[0].root), urls)
    assert sorted(m["name"] for m in members) == sorted(cp.name for cp in cps)

    # every Node Ready with a v1.33.0 kubelet (read through another control plane's admin.conf), none cordoned
    admin = cps[1].root / "etc/kubernetes/admin.conf"
    got = subprocess.run(
        ["kubectl", "--kubeconfig", str(admin), "get", "nodes", "-o", "json"], capture_output=True, text=True
    )
    items = json.loads(got.stdout)["items"]
    assert sorted(i["metadata"]["name"] for i in items) == sorted(NODES)
    assert all(any(c["type"] == "Ready" and c["status"] == "True" for c in i["status"]["conditions"]) for i in items)
    assert {i["metadata"]["name"]: i["status"]["nodeInfo"]["kubeletVersion"] for i in items} == dict.fromkeys(
        NODES, "v1.33.0"
    )
    assert [i["metadata"]["name"] for i in items if i["spec"].get("unschedulable")] == []
    plan_now = pykubeadm("--root-dir", str(lab.root(CONTROL_PLANES[0])), "upgrade", "plan", "v1.33.0")
    assert plan_now.returncode == 0, plan_now.stderr[-2000:]
    assert "Awesome, you're up-to-date! Enjoy!" in plan_now.stdout
    assert "must be upgraded manually" not in plan_now.stdout
