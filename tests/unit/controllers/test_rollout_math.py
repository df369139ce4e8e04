"""Deployment rollout math (deploymentutil) and DaemonSet placement and update decisions (daemonset), as kube's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pykubeadm.controllers.daemon.util import (
    add_daemon_tolerations,
    is_pod_updated,
    node_should_run,
    rolling_update_plan,
    target_node,
    template_generation,
    with_node_affinity,
)
from pykubeadm.controllers.deployment import status as dst
from pykubeadm.controllers.deployment import util as du

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def ts(delta: float = 0) -> str:
    return (NOW - timedelta(seconds=delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def deployment(replicas: int = 3, surge: Any = "25%", unavailable: Any = "25%", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "generation": 1, "annotations": {}},
        "spec": {
            "replicas": replicas,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}},
            "progressDeadlineSeconds": 600,
            **spec,
        },
        "status": {},
    }


def rs(name: str, replicas: int, available: int = 0, created: float = 0, **annotations: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "creationTimestamp": ts(created), "annotations": dict(annotations)},
        "spec": {"replicas": replicas},
        "status": {"replicas": replicas, "availableReplicas": available, "readyReplicas": available},
    }


def test_surge_and_unavailable_rounding() -> None:
    d = deployment(10)
    assert (du.max_surge(d), du.max_unavailable(d)) == (3, 2)  # surge rounds up, unavailable down
    d = deployment(3)
    assert (du.max_surge(d), du.max_unavailable(d)) == (1, 0)
    d = deployment(3, surge=0, unavailable=0)
    assert (du.max_surge(d), du.max_unavailable(d)) == (0, 1)  # never both zero
    d = deployment(2, surge=1, unavailable=5)
    assert du.max_unavailable(d) == 2  # capped at replicas
    recreate = {"spec": {"replicas": 3, "strategy": {"type": "Recreate"}}}
    assert (du.max_surge(recreate), du.max_unavailable(recreate)) == (0, 0)


def test_rolling_update_steps() -> None:
    d = deployment(3, surge=1, unavailable=1)
    old, new = rs("old", 3, available=3, created=100), rs("new", 0, created=1)
    assert du.new_rs_new_replicas(d, [old, new], new) == 1  # one surge Pod
    new = rs("new", 1, available=0, created=1)
    assert du.new_rs_new_replicas(d, [old, new], new) == 1  # at replicas + maxSurge: wait
    # scale down old: 4 Pods, min available 2, 1 new unavailable → at most 1 may go; 3 available → 1 goes
    assert [(r["metadata"]["name"], n) for r, n in du.scale_down_old_steps([old, new], [old], d)] == [("old", 2)]
    unhealthy = rs("old", 3, available=1, created=100)
    assert [(r["metadata"]["name"], n) for r, n in du.cleanup_unhealthy_steps([unhealthy], 5)] == [("old", 1)]
    assert du.cleanup_unhealthy_steps([unhealthy], 1)[0][1] == 2
    lagging = rs("old", 2, available=3, created=100)  # spec lowered, Pods not yet deleted: never scale it up
    with pytest.raises(ValueError, match="invalid request to scale down"):
        du.cleanup_unhealthy_steps([lagging], 2)


def test_proportional_scaling_during_a_rollout() -> None:
    d = deployment(20, surge=0, unavailable=1)
    a = rs("a", 5, created=100, **{du.MAX_REPLICAS_ANNOTATION: "10"})
    b = rs("b", 5, created=1, **{du.MAX_REPLICAS_ANNOTATION: "10"})
    sizes, op = du.proportional_sizes(d, [a, b])
    assert op == "up" and sorted((r["metadata"]["name"], n) for r, n in sizes) == [("a", 10), ("b", 10)]
    d = deployment(5, surge=0, unavailable=1)
    sizes, op = du.proportional_sizes(d, [a, b])
    assert op == "down" and sum(n for _, n in sizes) == 5


def test_revision_annotations_and_history() -> None:
    d = deployment(3)
    d["metadata"]["annotations"] = {"kubernetes.io/change-cause": "v2", du.REVISION_ANNOTATION: "1"}
    old = rs("web-abc", 0, **{du.REVISION_ANNOTATION: "1"})
    assert du.set_new_rs_annotations(d, old, 3, exists=True)
    ann = old["metadata"]["annotations"]
    assert ann[du.REVISION_ANNOTATION] == "3" and ann[du.REVISION_HISTORY_ANNOTATION] == "1"
    assert ann["kubernetes.io/change-cause"] == "v2"
    assert not du.set_new_rs_annotations(d, old, 3, exists=True)  # idempotent
    fresh = rs("web-def", 1)
    du.set_new_rs_annotations(d, fresh, 4, exists=False)
    assert fresh["metadata"]["annotations"][du.DESIRED_REPLICAS_ANNOTATION] == "3"
    assert fresh["metadata"]["annotations"][du.MAX_REPLICAS_ANNOTATION] == "4"
    assert du.REVISION_HISTORY_ANNOTATION not in fresh["metadata"]["annotations"]


def test_find_new_rs_ignores_the_hash_label() -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    d = deployment(3, template=template)
    hashed = {"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}}, "spec": template["spec"]}
    other = {"metadata": {"labels": {"app": "web", "pod-template-hash": "def"}}, "spec": {"containers": []}}
    a, b = rs("a", 1), rs("b", 1)
    a["spec"]["template"], b["spec"]["template"] = other, hashed
    assert du.find_new_rs(d, [a, b]) is b


def test_cleanup_keeps_revision_history_limit() -> None:
    olds = [rs(f"r{i}", 0, **{du.REVISION_ANNOTATION: str(i)}) for i in range(1, 5)]
    olds[0]["spec"]["replicas"] = 1  # still has Pods: never deleted
    assert [r["metadata"]["name"] for r in du.rss_to_cleanup(olds, 1)] == ["r2", "r3"]
    assert du.rss_to_cleanup(olds, 10) == []


def test_conditions_and_status() -> None:
    d = deployment(3, surge=1, unavailable=1)
    new = rs("new", 3, available=2)
    status = dst.calculate_status([new], new, d, NOW)
    assert status["availableReplicas"] == 2 and status["unavailableReplicas"] == 1
    (available,) = status["conditions"]
    assert (available["status"], available["reason"], available["message"]) == (
        "True",
        "MinimumReplicasAvailable",
        "Deployment has minimum availability.",
    )
    later = NOW + timedelta(seconds=5)
    dst.set_condition(status, dst.new_condition("Available", "True", "Other", "m", later))
    assert status["conditions"][0]["lastTransitionTime"] == ts()  # same status keeps the transition time
    assert dst.deployment_complete(
        d, {"updatedReplicas": 3, "replicas": 3, "availableReplicas": 3, "observedGeneration": 1}
    )
    d["status"] = {
        "conditions": [dst.new_condition("Progressing", "True", "ReplicaSetUpdated", "x", NOW - timedelta(seconds=601))]
    }
    assert dst.deployment_timed_out(d, d["status"], NOW)
    d["spec"]["progressDeadlineSeconds"] = 700
    assert not dst.deployment_timed_out(d, d["status"], NOW)


def node(name: str, taints: list[dict[str, str]] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


def daemonset(**template_spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "ds"},
        "spec": {
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [], **template_spec}},
        },
    }


def test_daemon_node_eligibility() -> None:
    cp = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
    assert node_should_run(node("n"), daemonset()) == (True, True)
    assert node_should_run(node("cp", [cp]), daemonset()) == (False, True)  # NoSchedule: keep running Pods
    tolerating = daemonset(tolerations=[{"key": cp["key"], "operator": "Exists", "effect": "NoSchedule"}])
    assert node_should_run(node("cp", [cp]), tolerating) == (True, True)
    evict = {"key": "dedicated", "value": "x", "effect": "NoExecute"}
    assert node_should_run(node("n", [evict]), daemonset()) == (False, False)
    not_ready = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}
    assert node_should_run(node("n", [not_ready]), daemonset()) == (True, True)  # default toleration
    net = {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}
    assert node_should_run(node("n", [net]), daemonset())[0] is False
    assert node_should_run(node("n", [net]), daemonset(hostNetwork=True)) == (True, True)
    assert node_should_run(node("n"), daemonset(nodeSelector={"disk": "ssd"})) == (False, False)
    assert node_should_run(node("n", labels={"disk": "ssd"}), daemonset(nodeSelector={"disk": "ssd"})) == (True, True)


def test_daemon_pod_affinity_and_tolerations() -> None:
    spec: dict[str, Any] = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}
    }
    with_node_affinity(spec, "n2")
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]
    assert target_node({"spec": spec}) == "n2"
    assert target_node({"spec": {**spec, "nodeName": "n3"}}) == "n3"
    pod_spec: dict[str, Any] = {
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}]
    }
    add_daemon_tolerations(pod_spec)
    assert len(pod_spec["tolerations"]) == 6  # the existing one is not duplicated; no network-unavailable


def daemon_pod(name: str, hash_: str, ready: bool = True) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": ts(100)}] if ready else []
    return {
        "metadata": {"name": name, "labels": {"controller-revision-hash": hash_}},
        "spec": {"nodeName": name},
        "status": {"phase": "Running", "conditions": conditions},
    }


def test_daemon_rolling_update_plans() -> None:
    ds = daemonset()
    node_pods = {f"n{i}": [daemon_pod(f"n{i}", "old")] for i in range(3)}
    assert rolling_update_plan(ds, node_pods, 3, "new", NOW, set(node_pods)) == (["n0"], [])
    node_pods["n0"] = [daemon_pod("n0", "new", ready=False)]  # replaced, not yet available: the budget is spent
    assert rolling_update_plan(ds, node_pods, 3, "new", NOW, set(node_pods)) == ([], [])
    node_pods["n1"] = [daemon_pod("n1", "old", ready=False)]  # an unavailable old Pod may always go
    assert rolling_update_plan(ds, node_pods, 3, "new", NOW, set(node_pods)) == (["n1"], [])
    surge = daemonset()
    surge["spec"]["updateStrategy"]["rollingUpdate"] = {"maxUnavailable": 0, "maxSurge": 1}
    node_pods = {f"n{i}": [daemon_pod(f"n{i}", "old")] for i in range(3)}
    assert rolling_update_plan(surge, node_pods, 3, "new", NOW, set(node_pods)) == ([], ["n0"])
    node_pods["n0"].append(daemon_pod("n0-new", "new"))  # surged Pod available: the old one goes
    assert rolling_update_plan(surge, node_pods, 3, "new", NOW, set(node_pods)) == (["n0"], ["n1"])


def test_rollout_status_progressing_complete_and_timed_out() -> None:
    d = deployment(3, surge=1, unavailable=1)
    d["status"] = {"replicas": 3, "updatedReplicas": 1, "availableReplicas": 3, "conditions": []}
    new, old = rs("web-new", 2, available=1), rs("web-old", 2, available=2)
    status = dst.rollout_status(d, [old, new], new, NOW)
    progressing = dst.get_condition(status, "Progressing")
    assert progressing is not None
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "True",
        "ReplicaSetUpdated",
        'ReplicaSet "web-new" is progressing.',
    )
    d["status"] = status
    done = rs("web-new", 3, available=3)
    status = dst.rollout_status(d, [rs("web-old", 0), done], done, NOW)
    progressing = dst.get_condition(status, "Progressing")
    assert progressing is not None and progressing["reason"] == "NewReplicaSetAvailable"
    assert progressing["message"] == 'ReplicaSet "web-new" has successfully progressed.'
    stuck = deployment(3, surge=1, unavailable=1)
    stuck["status"] = {
        "replicas": 4,
        "updatedReplicas": 1,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "conditions": [
            dst.new_condition("Progressing", "True", "ReplicaSetUpdated", "x", NOW - timedelta(seconds=700))
        ],
    }
    new, old = rs("web-new", 1, available=0), rs("web-old", 3, available=3)
    status = dst.rollout_status(stuck, [old, new], new, NOW)
    progressing = dst.get_condition(status, "Progressing")
    assert progressing is not None
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "False",
        "ProgressDeadlineExceeded",
        'ReplicaSet "web-new" has timed out progressing.',
    )
    fresh = deployment(3)
    fresh["status"] = {"conditions": [dst.new_condition("Progressing", "True", "ReplicaSetUpdated", "x", NOW)]}
    assert dst.stuck_requeue_after(fresh, {}, NOW) == 600


def test_daemon_pod_updated_by_hash_or_template_generation() -> None:
    ds = daemonset()
    assert template_generation(ds) is None
    ds["metadata"]["annotations"] = {"deprecated.daemonset.template.generation": "3"}
    assert template_generation(ds) == "3"
    pod = daemon_pod("n0", "old")
    assert not is_pod_updated(pod, "new", None)
    assert is_pod_updated(daemon_pod("n0", "new"), "new", None)
    pod["metadata"]["labels"]["pod-template-generation"] = "3"
    assert is_pod_updated(pod, "new", "3")
