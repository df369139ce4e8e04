"""Workloads end to end on real kubelets (issue #15): one lab (a control plane and two workers, a third joins), the
machine's kubectl, real Pod processes. Deployments spread, roll and roll back; a DaemonSet follows the nodes; drain
honours a PodDisruptionBudget; Jobs complete and fail; deleting a Deployment removes its ReplicaSets, Pods and
processes; a worker whose kubelet dies turns NotReady, is tainted unreachable and its Pods move; kubeadm's coredns and
kube-proxy have their Pods."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_lab import Lab, _kill_leftovers
from tests.e2e.test_pods import wait_for

pytestmark = pytest.mark.e2e

PREFIX = "127.0.16."
ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"},
    "PYKUBEADM_LAB_ADDRESS_PREFIX": PREFIX,
    # the stopped kubelet's Node turns NotReady in seconds, not kube's 40 s (lab/nodes.py passes it to kubeadm)
    "PYKUBEADM_LAB_NODE_MONITOR_GRACE_PERIOD": "20s",
}
CONTROL_PLANE = "lab-control-plane"
WORKERS = ["lab-worker", "lab-worker2"]
JOINED = "lab-worker3"
PAUSE = "registry.k8s.io/pause:3.10"
PAUSE_NEXT = "registry.k8s.io/pause:3.9"


def pykubeadm(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pykubeadm", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab_dir = tmp_path_factory.mktemp("workloads")
    try:
        res = pykubeadm("lab", "up", "--topology", "loopback", "--dir", str(lab_dir), "--workers", str(len(WORKERS)))
        assert res.returncode == 0, f"lab up failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
        yield Lab(lab_dir)
    finally:
        pykubeadm("lab", "down", "--dir", str(lab_dir))
        left = _kill_leftovers(lab_dir)
        assert not left, f"lab down left processes running: {left}"


@pytest.fixture(scope="module")
def api(lab: Lab) -> Iterator[Any]:
    """A lightkube client for fast polling (kubectl does the user's part)."""
    from pykubeadm.client import sync_client

    with sync_client(lab.admin) as client:
        yield client


def kubectl_json(lab: Lab, *args: str) -> Any:
    return json.loads(lab.kubectl(*args, "-o", "json").stdout)


def apply(lab: Lab, *objs: dict[str, Any]) -> None:
    res = subprocess.run(
        ["kubectl", "--kubeconfig", str(lab.admin), "apply", "-f", "-"],
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr


def pods(lab: Lab, selector: str, namespace: str = "default") -> list[dict[str, Any]]:
    return list(kubectl_json(lab, "-n", namespace, "get", "pods", "-l", selector)["items"])


def ready(pod: dict[str, Any]) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def running_ready(lab: Lab, selector: str, count: int) -> list[dict[str, Any]] | None:
    """Exactly `count` Pods, all Running and Ready, none being deleted."""
    items = pods(lab, selector)
    live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
    ok = len(items) == count and all(p["status"].get("phase") == "Running" and ready(p) for p in live)
    return items if ok and len(live) == count else None


def deployment(name: str, replicas: int, image: str = PAUSE, **pod_spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "pause", "image": image}], **pod_spec},
            },
        },
    }


def processes_of(lab: Lab, uid: str) -> list[int]:
    """Processes whose command line names the Pod's directory on some node (its shim and container)."""
    needles = [str(lab.dir / node / "var/lib/kubelet/pods" / uid).encode() for node in (CONTROL_PLANE, *WORKERS)]
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if any(n in cmdline for n in needles):
                out.append(int(entry.name))
    return out


# --- kubeadm's addons ------------------------------------------------------------------------------------------------


def test_kubeadm_addons_have_their_pods_scheduled(lab: Lab) -> None:
    def kube_proxy() -> list[str] | None:
        nodes = [p["spec"].get("nodeName") for p in pods(lab, "k8s-app=kube-proxy", "kube-system")]
        return nodes if len(nodes) == 3 and all(nodes) else None

    nodes = wait_for(kube_proxy, 60, "a kube-proxy Pod on each node")
    assert sorted(nodes) == sorted([CONTROL_PLANE, *WORKERS])  # one per node
    dns = wait_for(
        lambda: (p := pods(lab, "k8s-app=kube-dns", "kube-system")) and all(x["spec"].get("nodeName") for x in p) and p,
        60,
        "coredns Pods scheduled",
    )
    assert len(dns) == 2


# --- Deployments -----------------------------------------------------------------------------------------------------


def test_deployment_runs_three_replicas_spread_over_the_workers(lab: Lab) -> None:
    apply(lab, deployment("web", 3))
    items = wait_for(lambda: running_ready(lab, "app=web", 3), 90, "3 web Pods Running and Ready")
    assert {p["spec"]["nodeName"] for p in items} == set(WORKERS)  # spread; the control plane is tainted
    (rs,) = kubectl_json(lab, "get", "rs", "-l", "app=web")["items"]
    dep = kubectl_json(lab, "get", "deploy", "web")
    (rs_owner,) = rs["metadata"]["ownerReferences"]
    assert (rs_owner["kind"], rs_owner["name"], rs_owner["uid"]) == ("Deployment", "web", dep["metadata"]["uid"])
    assert rs_owner["controller"] is True
    for pod in items:
        (owner,) = pod["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("ReplicaSet", rs["metadata"]["uid"], True)
        assert pod["metadata"]["labels"]["pod-template-hash"] == rs["metadata"]["labels"]["pod-template-hash"]
    events = kubectl_json(lab, "get", "events", "--field-selector", "reason=Scheduled")["items"]
    assigned = {e["involvedObject"]["name"]: e for e in events}
    for pod in items:
        event = assigned[pod["metadata"]["name"]]
        assert (
            event["message"] == f"Successfully assigned default/{pod['metadata']['name']} to {pod['spec']['nodeName']}"
        )
        assert event["source"]["component"] == "default-scheduler"
    status = wait_for(
        lambda: (s := kubectl_json(lab, "get", "deploy", "web")["status"]).get("availableReplicas") == 3 and s,
        30,
        "web available",
    )
    assert (status["replicas"], status["readyReplicas"], status["updatedReplicas"]) == (3, 3, 3)


def test_required_anti_affinity_leaves_a_replica_pending_with_kubes_message(lab: Lab) -> None:
    term = {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "kubernetes.io/hostname"}
    apply(
        lab,
        deployment("solo", 3, affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}),
    )

    def two_running_one_pending() -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
        items = pods(lab, "app=solo")
        running = [p for p in items if p["status"].get("phase") == "Running" and ready(p)]
        pending = [p for p in items if not p["spec"].get("nodeName")]
        conds = [c for p in pending for c in p["status"].get("conditions") or [] if c["type"] == "PodScheduled"]
        return (running, conds[0]) if len(items) == 3 and len(running) == 2 and conds else None

    running, cond = wait_for(two_running_one_pending, 90, "two solo Pods running, one unschedulable")
    assert sorted(p["spec"]["nodeName"] for p in running) == sorted(WORKERS)  # one per node
    message = (
        "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "2 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are available: "
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
    )
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", message)
    events = kubectl_json(lab, "get", "events", "--field-selector", "reason=FailedScheduling")["items"]
    assert any(e["message"] == message and e["type"] == "Warning" for e in events)
    lab.kubectl("delete", "deploy", "solo", "--wait=false")
    wait_for(lambda: not pods(lab, "app=solo"), 60, "solo Pods gone")


class _AvailabilityWatch(threading.Thread):
    """Samples the Ready, not-terminating Pods of a selector until stopped; `low` is the fewest seen."""

    def __init__(self, api: Any, selector: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.api, self.selector = api, selector
        self.low: int | None = None
        self.samples = 0
        self._halt = threading.Event()

    def run(self) -> None:
        from lightkube.resources.core_v1 import Pod

        while not self._halt.is_set():
            items = list(self.api.list(Pod, namespace="default", labels=self.selector))
            n = sum(
                1
                for p in items
                if not p.metadata.deletionTimestamp
                and any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))
            )
            self.low = n if self.low is None else min(self.low, n)
            self.samples += 1
            time.sleep(0.1)

    def stop(self) -> int:
        self._halt.set()
        self.join(10)
        # sampled before the change began (see _rollout) and at least once more: a rollout of pause Pods on a quiet
        # machine can be over in under half a second, so the count of samples says nothing more
        assert self.low is not None and self.samples >= 2
        return self.low


def _rollout(lab: Lab, api: Any, *args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    watch = _AvailabilityWatch(api, {"app": "web"})
    watch.start()
    try:
        wait_for(lambda: watch.samples >= 1, 30, "a first availability sample before the change")
        lab.kubectl(*args)
        res = subprocess.run(
            ["kubectl", "--kubeconfig", str(lab.admin), "rollout", "status", "deploy/web", "--timeout=180s"],
            capture_output=True,
            text=True,
            timeout=200,
        )
    finally:
        low = watch.stop()
    return res, low


def images(lab: Lab) -> set[str]:
    return {p["spec"]["containers"][0]["image"] for p in pods(lab, "app=web")}


def test_set_image_rolls_with_two_available_at_every_step(lab: Lab, api: Any) -> None:
    wait_for(lambda: running_ready(lab, "app=web", 3), 60, "web settled")
    res, low = _rollout(lab, api, "set", "image", "deploy/web", f"pause={PAUSE_NEXT}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert 'deployment "web" successfully rolled out' in res.stdout
    assert low >= 2, f"only {low} Pods were available during the rollout"
    wait_for(lambda: running_ready(lab, "app=web", 3), 60, "3 new web Pods")
    assert images(lab) == {PAUSE_NEXT}
    rss = {r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: r["spec"]["replicas"]
           for r in kubectl_json(lab, "get", "rs", "-l", "app=web")["items"]}  # fmt: skip
    assert rss == {"1": 0, "2": 3}


def test_rollout_undo_returns_to_the_previous_image(lab: Lab, api: Any) -> None:
    res, low = _rollout(lab, api, "rollout", "undo", "deploy/web")
    assert res.returncode == 0, res.stdout + res.stderr
    assert low >= 2
    wait_for(lambda: running_ready(lab, "app=web", 3) and images(lab) == {PAUSE}, 60, "web back on the first image")
    dep = kubectl_json(lab, "get", "deploy", "web")
    assert dep["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"


# --- DaemonSet and a joining node ------------------------------------------------------------------------------------


def test_daemonset_runs_one_pod_per_node_and_follows_a_joining_node(lab: Lab) -> None:
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {
                    "tolerations": [
                        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
                    ],
                    "containers": [{"name": "pause", "image": PAUSE}],
                },
            },
        },
    }
    apply(lab, ds)
    items = wait_for(lambda: running_ready(lab, "app=agent", 3), 90, "an agent Pod Running on each of 3 nodes")
    assert sorted(p["spec"]["nodeName"] for p in items) == sorted([CONTROL_PLANE, *WORKERS])
    res = pykubeadm("lab", "join", "--dir", str(lab.dir))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    if JOINED not in WORKERS:
        WORKERS.append(JOINED)  # the later tests use it too
    items = wait_for(lambda: running_ready(lab, "app=agent", 4), 90, "an agent Pod on the joined node")
    assert sorted(p["spec"]["nodeName"] for p in items) == sorted([CONTROL_PLANE, *WORKERS])
    status = kubectl_json(lab, "get", "ds", "agent")["status"]
    assert (status["desiredNumberScheduled"], status["currentNumberScheduled"]) == (4, 4)


# --- drain against a PodDisruptionBudget -----------------------------------------------------------------------------


def taint_keys(lab: Lab, node: str) -> set[str]:
    return {t["key"] for t in kubectl_json(lab, "get", "node", node)["spec"].get("taints") or []}


def test_drain_is_held_back_by_a_pdb_until_replacements_are_ready(lab: Lab) -> None:
    target, others = WORKERS[0], WORKERS[1:]
    for node in others:  # all three replicas start on the node to drain
        lab.kubectl("cordon", node)
    probe = {"exec": {"command": ["true"]}, "initialDelaySeconds": 3, "periodSeconds": 1}
    guarded = deployment("guarded", 3, "busybox", terminationGracePeriodSeconds=1)
    guarded["spec"]["template"]["spec"]["containers"] = [
        {"name": "sleep", "image": "busybox", "command": ["sh", "-c", "sleep 3600"], "readinessProbe": probe}
    ]
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}},
    }
    apply(lab, guarded, pdb)
    items = wait_for(lambda: running_ready(lab, "app=guarded", 3), 90, "3 guarded Pods Ready")
    assert {p["spec"]["nodeName"] for p in items} == {target}
    for node in others:
        lab.kubectl("uncordon", node)
    wait_for(lambda: kubectl_json(lab, "get", "pdb", "guarded")["status"].get("disruptionsAllowed") == 1, 30, "pdb")
    start = time.monotonic()
    res = subprocess.run(
        ["kubectl", "--kubeconfig", str(lab.admin), "drain", target, "--ignore-daemonsets", "--delete-emptydir-data",
         "--timeout=180s"],
        capture_output=True, text=True, timeout=200,
    )  # fmt: skip
    took = time.monotonic() - start
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout + res.stderr
    assert "Cannot evict pod as it would violate the pod's disruption budget." in out  # held back, then retried
    assert f"node/{target} drained" in out and took > 3
    items = wait_for(lambda: running_ready(lab, "app=guarded", 3), 60, "3 guarded Pods Ready after the drain")
    assert target not in {p["spec"]["nodeName"] for p in items}
    node = kubectl_json(lab, "get", "node", target)
    assert node["spec"].get("unschedulable") is True
    wait_for(lambda: "node.kubernetes.io/unschedulable" in taint_keys(lab, target), 30, "the unschedulable taint")
    left = [
        p["metadata"]["name"]
        for p in kubectl_json(lab, "get", "pods", "--field-selector", f"spec.nodeName={target}")["items"]
    ]
    assert all(name.startswith("agent-") for name in left), left  # only the DaemonSet's Pod stays
    lab.kubectl("uncordon", target)
    assert not kubectl_json(lab, "get", "node", target)["spec"].get("unschedulable")
    wait_for(lambda: "node.kubernetes.io/unschedulable" not in taint_keys(lab, target), 30, "the taint removed")
    lab.kubectl("delete", "pdb", "guarded")
    lab.kubectl("delete", "deploy", "guarded", "--wait=false")


# --- Jobs ------------------------------------------------------------------------------------------------------------


def job(name: str, script: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            **spec,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", script]}],
                }
            },
        },
    }


def job_condition(lab: Lab, name: str) -> dict[str, Any] | None:
    status = kubectl_json(lab, "get", "job", name)["status"]
    return next(
        (c for c in status.get("conditions") or [] if c["type"] in ("Complete", "Failed") and c["status"] == "True"),
        None,
    )


def test_jobs_complete_and_fail_with_backoff_limit_exceeded(lab: Lab) -> None:
    apply(lab, job("done", "exit 0", completions=3, parallelism=2), job("broken", "exit 1", backoffLimit=1))
    cond = wait_for(lambda: job_condition(lab, "done"), 120, "job done Complete")
    assert cond["type"] == "Complete"
    status = kubectl_json(lab, "get", "job", "done")["status"]
    assert status["succeeded"] == 3 and not status.get("active")
    assert len(pods(lab, "job-name=done")) == 3
    cond = wait_for(lambda: job_condition(lab, "broken"), 120, "job broken Failed")
    assert (cond["type"], cond["reason"]) == ("Failed", "BackoffLimitExceeded")
    assert cond["message"] == "Job has reached the specified backoff limit"
    assert kubectl_json(lab, "get", "job", "broken")["status"]["failed"] == 2  # backoffLimit 1: two attempts


# --- deletion --------------------------------------------------------------------------------------------------------


def test_deleting_a_deployment_removes_its_replicasets_pods_and_processes(lab: Lab) -> None:
    items = wait_for(lambda: running_ready(lab, "app=web", 3), 60, "web Running")
    uids = [p["metadata"]["uid"] for p in items]
    assert all(processes_of(lab, uid) for uid in uids)
    lab.kubectl("delete", "deploy", "web")
    wait_for(lambda: not kubectl_json(lab, "get", "rs", "-l", "app=web")["items"], 60, "web ReplicaSets deleted")
    wait_for(lambda: not pods(lab, "app=web"), 60, "web Pods deleted")
    wait_for(lambda: not any(processes_of(lab, uid) for uid in uids), 30, "web Pod processes gone")


# --- a node whose kubelet dies ---------------------------------------------------------------------------------------


def test_pods_leave_a_worker_whose_kubelet_stopped(lab: Lab) -> None:
    from pykubeadm.layout import Layout
    from pykubeadm.phases.kubeletservice import kubelet_pid

    toleration = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                  "tolerationSeconds": 5}  # fmt: skip
    apply(lab, deployment("tolerant", 4, tolerations=[toleration]))
    items = wait_for(lambda: running_ready(lab, "app=tolerant", 4), 90, "4 tolerant Pods")
    by_node: dict[str, list[str]] = {}
    for p in items:
        by_node.setdefault(p["spec"]["nodeName"], []).append(p["metadata"]["name"])
    victim = max(by_node, key=lambda n: len(by_node[n]))
    pid = kubelet_pid(Layout(lab.root(victim)))
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # the kubelet alone, found by its pid file: its Pods keep running
    try:
        wait_for(
            lambda: any(
                c["type"] == "Ready" and c["status"] == "Unknown"
                for c in kubectl_json(lab, "get", "node", victim)["status"]["conditions"]
            ),
            90,
            f"{victim} NotReady",
        )
        taints = wait_for(
            lambda: (
                {(t["key"], t["effect"]) for t in kubectl_json(lab, "get", "node", victim)["spec"].get("taints") or []}
                >= {("node.kubernetes.io/unreachable", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute")}
            ),
            30,
            "unreachable taints",
        )
        assert taints

        def moved() -> list[dict[str, Any]] | None:
            live = [p for p in pods(lab, "app=tolerant") if not p["metadata"].get("deletionTimestamp")]
            ok = len(live) == 4 and all(ready(p) and p["spec"]["nodeName"] != victim for p in live)
            return live if ok else None

        live = wait_for(moved, 90, "4 tolerant Pods Ready on the other workers")
        assert {p["spec"]["nodeName"] for p in live} <= set(WORKERS) - {victim}
        evicted = [e for e in kubectl_json(lab, "get", "events", "--field-selector", "reason=TaintManagerEviction")["items"]
                   if e["involvedObject"]["name"] in by_node[victim]]  # fmt: skip
        assert evicted
    finally:
        with contextlib.suppress(Exception):
            pykubeadm("lab", "start", "--dir", str(lab.dir), victim)
