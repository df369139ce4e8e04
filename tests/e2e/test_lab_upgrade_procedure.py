"""kubeadm's upgrade procedure on a lab (issue #41): a lab made at v1.32.4 has v1.32.4 kubelets; `lab upgrade v1.33.0`
takes each node in turn through `upgrade apply`/`upgrade node`, drain, the kubelet upgrade and restart, uncordon,
while a Deployment guarded by a PodDisruptionBudget keeps at least its budget's Pods ready (sampled every 0.5 s with
the official Python client); afterwards every kubelet is v1.33.0, no node is cordoned and `upgrade plan` has nothing
left to do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_lab import Lab, _kill_leftovers
from tests.e2e.test_pods import wait_for
from tests.e2e.test_workloads import apply, deployment

pytestmark = pytest.mark.e2e

PREFIX = "127.0.41."
ENV = {**{k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}, "PYKUBEADM_LAB_ADDRESS_PREFIX": PREFIX}
CONTROL_PLANE = "lab-control-plane"
NODES = [CONTROL_PLANE, "lab-worker", "lab-worker2"]


def pykubeadm(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pykubeadm", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab_dir = tmp_path_factory.mktemp("upgrade-procedure")
    try:
        res = pykubeadm(
            "lab",
            "up",
            "--topology",
            "loopback",
            "--dir",
            str(lab_dir),
            "--workers",
            "2",
            "--kubernetes-version",
            "v1.32.4",
        )
        assert res.returncode == 0, f"lab up failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
        yield Lab(lab_dir)
    finally:
        pykubeadm("lab", "down", "--dir", str(lab_dir))
        left = _kill_leftovers(lab_dir)
        assert not left, f"lab down left processes running: {left}"


def nodes(lab: Lab) -> list[dict[str, Any]]:
    return list(json.loads(lab.kubectl("get", "nodes", "-o", "json").stdout)["items"])


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
            except Exception:  # the API server restarts with its node's kubelet: no answer is not an answer
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
    assert sorted(n["metadata"]["name"] for n in items) == NODES
    assert {n["metadata"]["name"]: n["status"]["nodeInfo"]["kubeletVersion"] for n in items} == dict.fromkeys(
        NODES, "v1.32.4"
    )
    version = json.loads(lab.kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
    assert version == "v1.32.4"


def test_lab_upgrade_drains_upgrades_and_uncordons_each_node_with_the_budget_held(lab: Lab) -> None:
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

    sampler = Sampler(lab.admin)
    sampler.start()
    try:
        res = pykubeadm("lab", "upgrade", "--dir", str(lab.dir), "v1.33.0")
    finally:
        sampler.stop.set()
        sampler.join()
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    out = res.stdout.splitlines()

    # the plan the operator reads first lists every kubelet still to upgrade by hand
    plan = [line.split() for line in out if line.strip().startswith("kubelet ")]
    assert plan == [["kubelet", name, "v1.32.4", "v1.33.0"] for name in NODES]

    # each node in turn: its kubeadm step, drain, the kubelet, uncordon — the next node only after
    def index(text: str) -> int:
        found = [i for i, line in enumerate(out) if text in line]
        assert found, f"{text!r} not in the output:\n{res.stdout[-6000:]}"
        return found[0]

    steps = []
    for name, kubeadm in zip(NODES, ["upgrade apply v1.33.0", "upgrade node", "upgrade node"], strict=True):
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

    # the budget held: never fewer than 3 ready replicas while the nodes were drained one after another
    assert len(sampler.samples) >= 20, (len(sampler.samples), sampler.unanswered)
    assert min(min(s) for s in sampler.samples) >= 3, sampler.samples

    items = nodes(lab)
    assert {n["metadata"]["name"]: n["status"]["nodeInfo"]["kubeletVersion"] for n in items} == dict.fromkeys(
        NODES, "v1.33.0"
    )
    assert [n["metadata"]["name"] for n in items if n["spec"].get("unschedulable")] == []
    plan_now = pykubeadm("--root-dir", str(lab.root(CONTROL_PLANE)), "upgrade", "plan", "v1.33.0")
    assert plan_now.returncode == 0, plan_now.stderr[-2000:]
    assert "Awesome, you're up-to-date! Enjoy!" in plan_now.stdout
    assert "must be upgraded manually" not in plan_now.stdout
