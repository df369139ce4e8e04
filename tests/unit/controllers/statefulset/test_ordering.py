"""The StatefulSet's ordering decisions: OrderedReady vs Parallel, scale down, partitioned rolling updates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pykubeadm.controllers.statefulset.identity import claim_owner_refs, new_claims, new_pod
from pykubeadm.controllers.statefulset.ordering import compute_status, plan

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def sts(replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "default", "uid": "set-uid"},
        "spec": {
            "replicas": replicas,
            "serviceName": "nginx",
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [{"name": "c"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"]}}],
            **spec,
        },
    }


def pod(ordinal: int, *, ready: bool = True, rev: str = "web-1", deleting: bool = False, phase: str = "") -> dict:
    since = (NOW - timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta: dict[str, Any] = {"name": f"web-{ordinal}", "uid": f"u{ordinal}",
                            "labels": {"controller-revision-hash": rev}}  # fmt: skip
    if deleting:
        meta["deletionTimestamp"] = since
    status = {
        "phase": phase or ("Running" if ready else "Pending"),
        "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": since}],
    }
    return {"metadata": meta, "status": status}


def steps(result: Any) -> list[tuple[str, int]]:
    return [(s.action, s.ordinal) for s in result.steps]


def test_ordered_ready_creates_one_pod_at_a_time_after_the_previous_is_ready() -> None:
    assert steps(plan(sts(), [], "web-1", "web-1", NOW)) == [("create", 0)]
    waiting = plan(sts(), [pod(0, ready=False)], "web-1", "web-1", NOW)
    assert (
        steps(waiting) == [] and waiting.waiting == "StatefulSet web is waiting for Pod web-0 to be Running and Ready"
    )
    assert steps(plan(sts(), [pod(0)], "web-1", "web-1", NOW)) == [("create", 1)]


def test_parallel_creates_every_missing_pod_at_once() -> None:
    result = plan(sts(podManagementPolicy="Parallel"), [pod(1, ready=False)], "web-1", "web-1", NOW)
    assert steps(result) == [("create", 0), ("create", 2)]


def test_scale_down_removes_the_highest_ordinal_first_one_at_a_time() -> None:
    pods = [pod(i) for i in range(4)]
    assert steps(plan(sts(1), pods, "web-1", "web-1", NOW)) == [("delete", 3)]
    assert steps(plan(sts(1, podManagementPolicy="Parallel"), pods, "web-1", "web-1", NOW)) == [
        ("delete", 3), ("delete", 2), ("delete", 1),
    ]  # fmt: skip
    blocked = plan(sts(1), [pod(0), pod(1, ready=False), pod(2, ready=False)], "web-1", "web-1", NOW)
    assert steps(blocked) == [] and "web-2" in blocked.waiting  # unhealthy and not the first unhealthy: wait
    first = plan(sts(2), [pod(0), pod(1), pod(2, ready=False)], "web-1", "web-1", NOW)
    assert steps(first) == [("delete", 2)]  # the first unhealthy Pod may go


def test_min_ready_seconds_waits_for_availability() -> None:
    result = plan(sts(minReadySeconds=120), [pod(0)], "web-1", "web-1", NOW)
    assert steps(result) == [] and result.recheck_after == 120 and result.waiting.endswith("to be Available")


def test_rolling_update_replaces_from_the_highest_ordinal_down_to_the_partition() -> None:
    pods = [pod(0, rev="old"), pod(1, rev="old"), pod(2, rev="old")]
    assert steps(plan(sts(), pods, "old", "new", NOW)) == [("delete", 2)]
    pods[2] = pod(2, rev="new", ready=False)
    assert steps(plan(sts(), pods, "old", "new", NOW)) == []  # wait for the updated Pod
    partitioned = sts(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}})
    pods[2] = pod(2, rev="new")
    assert steps(plan(partitioned, pods, "old", "new", NOW)) == []  # below the partition stays
    created = plan(partitioned, pods[:1], "old", "new", NOW)
    assert [(s.ordinal, s.current) for s in created.steps] == [(1, True)]  # re-created from the current revision
    on_delete = sts(updateStrategy={"type": "OnDelete"})
    assert steps(plan(on_delete, [pod(0, rev="old"), pod(1, rev="old"), pod(2, rev="old")], "old", "new", NOW)) == []


def test_max_unavailable_replaces_several_pods_at_once() -> None:
    spec = sts(4, updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}})
    pods = [pod(i, rev="old") for i in range(4)]
    assert steps(plan(spec, pods, "old", "new", NOW)) == [("delete", 3), ("delete", 2)]


def test_finished_pods_are_recreated() -> None:
    assert steps(plan(sts(1), [pod(0, phase="Failed", ready=False)], "web-1", "web-1", NOW)) == [
        ("delete", 0), ("create", 0),
    ]  # fmt: skip


def test_status_counts_and_completes_the_rollout() -> None:
    status = compute_status(sts(), [pod(0, rev="old"), pod(1, rev="new"), pod(2, rev="new")], "old", "new", NOW)
    assert (status["replicas"], status["readyReplicas"], status["currentReplicas"], status["updatedReplicas"]) == (
        3, 3, 1, 2,
    )  # fmt: skip
    assert status["currentRevision"] == "old"
    done = compute_status(sts(), [pod(i, rev="new") for i in range(3)], "old", "new", NOW)
    assert (done["currentRevision"], done["currentReplicas"], done["availableReplicas"]) == ("new", 3, 3)


def test_pod_identity_and_claims() -> None:
    made = new_pod(sts(), sts()["spec"]["template"], 1, "web-abc")
    assert made["metadata"]["name"] == "web-1"
    assert made["metadata"]["labels"] == {
        "app": "nginx",
        "statefulset.kubernetes.io/pod-name": "web-1",
        "apps.kubernetes.io/pod-index": "1",
        "controller-revision-hash": "web-abc",
    }
    assert (made["spec"]["hostname"], made["spec"]["subdomain"]) == ("web-1", "nginx")
    assert made["spec"]["volumes"] == [{"name": "www", "persistentVolumeClaim": {"claimName": "www-web-1"}}]
    (claim,) = new_claims(sts(), 1)
    assert claim["metadata"]["name"] == "www-web-1" and claim["metadata"]["labels"] == {"app": "nginx"}
    assert "ownerReferences" not in claim["metadata"]  # Retain/Retain: the claims outlive everything


def test_retention_policy_owner_references() -> None:
    policy = {"whenDeleted": "Delete", "whenScaled": "Delete"}
    spec = sts(persistentVolumeClaimRetentionPolicy=policy)
    claim = {"metadata": {"name": "www-web-2"}}
    refs = claim_owner_refs(spec, claim, pod(2), condemned=True)
    assert [(r["kind"], r["name"]) for r in refs] == [("StatefulSet", "web"), ("Pod", "web-2")]
    assert [r["kind"] for r in claim_owner_refs(spec, {"metadata": {"ownerReferences": refs}}, pod(2), False)] == [
        "StatefulSet"
    ]
