"""Pure helpers of the workload controllers: expectations, slow start, selectors, Pod ranking, hash, int-or-percent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pykubeadm.controllers.controllerutil import (
    ControllerExpectations,
    active_pods_ranked,
    compute_hash,
    fnv32a,
    is_pod_available,
    pod_from_template,
    safe_encode,
    scaled_value,
    selector_matches,
    slow_start_batches,
)
from pykubeadm.controllers.replicaset.controller import calculate_status, pods_to_delete

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def ts(delta: float) -> str:
    return (NOW - timedelta(seconds=delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready_for: float | None = 100,
    created: float = 1000,
    restarts: int = 0,
    cost: int | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    conditions = [] if ready_for is None else [{"type": "Ready", "status": "True", "lastTransitionTime": ts(ready_for)}]
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "creationTimestamp": ts(created)}
    if cost is not None:
        meta["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": str(cost)}
    if labels is not None:
        meta["labels"] = labels
    return {
        "metadata": meta,
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase, "conditions": conditions, "containerStatuses": [{"restartCount": restarts}]},
    }


def test_slow_start_batches_double() -> None:
    assert slow_start_batches(0) == []
    assert slow_start_batches(1) == [1]
    assert slow_start_batches(10) == [1, 2, 4, 3]
    assert sum(slow_start_batches(500)) == 500


def test_expectations_hold_syncs_until_the_cache_catches_up() -> None:
    clock = [0.0]
    exp = ControllerExpectations(clock=lambda: clock[0], timeout=300)
    assert exp.satisfied("ns/rs")  # nothing expected yet
    exp.expect_creations("ns/rs", 3)
    exp.creation_observed("ns/rs")
    exp.creation_observed("ns/rs")
    assert not exp.satisfied("ns/rs")
    exp.creation_observed("ns/rs")
    assert exp.satisfied("ns/rs")
    exp.expect_deletions("ns/rs", ["ns/a", "ns/b"])
    exp.deletion_observed("ns/rs", "ns/a")
    exp.deletion_observed("ns/rs", "ns/a")  # the same Pod twice (graceful delete, then gone) counts once
    exp.deletion_observed("ns/rs", "ns/x")  # not one we deleted
    assert not exp.satisfied("ns/rs")
    clock[0] = 301  # expectations expire so a lost watch event cannot wedge the controller
    assert exp.satisfied("ns/rs")


def test_selector_matching() -> None:
    assert not selector_matches(None, {"a": "b"})
    assert selector_matches({}, {"a": "b"})
    sel = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}],
    }
    assert selector_matches(sel, {"app": "web", "tier": "fe"})
    assert not selector_matches(sel, {"app": "web", "tier": "db"})
    assert not selector_matches(sel, {"app": "web"})
    assert selector_matches({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, {"app": "web"})


def test_scaled_values_round_like_kube() -> None:
    assert scaled_value("25%", 3, True) == 1
    assert scaled_value("25%", 3, False) == 0
    assert scaled_value("25%", 10, True) == 3
    assert scaled_value("25%", 10, False) == 2
    assert scaled_value(2, 10, True) == 2
    assert scaled_value("2", 10, True) == 2
    with pytest.raises(ValueError, match="not a percentage"):
        scaled_value("two", 10, True)


def test_hash_is_fnv32a_safe_encoded() -> None:
    assert fnv32a(b"") == 0x811C9DC5
    assert fnv32a(b"a") == 0xE40C292C
    assert safe_encode("0123456789") == "456789bcdf"  # each byte mod 27 into the no-vowel alphabet
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    h = compute_hash(template)
    assert h == compute_hash({"spec": template["spec"], "metadata": template["metadata"]})  # key order is irrelevant
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789") and 1 <= len(h) <= 10
    assert compute_hash(template, 1) != h
    other = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "j"}]}}
    assert compute_hash(other) != h


def test_pod_availability_needs_min_ready_seconds() -> None:
    p = pod("a", ready_for=5)
    assert is_pod_available(p, 0, NOW)
    assert is_pod_available(p, 4, NOW)
    assert not is_pod_available(p, 10, NOW)
    assert not is_pod_available(pod("b", ready_for=None), 0, NOW)


def test_deletion_ranking_follows_kube() -> None:
    unscheduled = pod("unscheduled", node="", phase="Pending", ready_for=None)
    pending = pod("pending", phase="Pending", ready_for=None)
    unknown = pod("unknown", phase="Unknown", ready_for=None)
    not_ready = pod("not-ready", ready_for=None)
    cheap = pod("cheap", cost=-10)
    recent_ready = pod("recent-ready", ready_for=10)
    restarts = pod("restarts", restarts=5)
    newer = pod("newer", created=100, ready_for=100000)
    older = pod("older", created=100000, ready_for=100000)
    pods = [older, newer, restarts, recent_ready, cheap, not_ready, unknown, pending, unscheduled]
    ranked = [p["metadata"]["name"] for p in active_pods_ranked(pods, now=NOW)]
    assert ranked == [
        "unscheduled",
        "pending",
        "unknown",
        "not-ready",
        "cheap",
        "recent-ready",
        "restarts",
        "newer",
        "older",
    ]


def test_doubled_up_pods_go_first() -> None:
    a, b = pod("a", node="n1"), pod("b", node="n2")
    related = [a, b, pod("other", node="n2")]
    assert [p["metadata"]["name"] for p in pods_to_delete([a, b], related, 1, NOW)] == ["b"]
    assert len(pods_to_delete([a, b], related, 2, NOW)) == 2


def test_pod_from_template_carries_labels_and_owner() -> None:
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "uid": "u", "controller": True}
    p = pod_from_template({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}}, "web-abc", ref)
    assert p["metadata"] == {"generateName": "web-abc-", "labels": {"app": "web"}, "ownerReferences": [ref]}


def test_replicaset_status_counts_and_failure_condition() -> None:
    rs = {
        "metadata": {"name": "rs", "generation": 2},
        "spec": {"replicas": 3, "minReadySeconds": 30, "template": {"metadata": {"labels": {"app": "web", "v": "1"}}}},
        "status": {},
    }
    pods = [
        pod("a", ready_for=60, labels={"app": "web", "v": "1"}),
        pod("b", ready_for=10, labels={"app": "web", "v": "1"}),
        pod("c", ready_for=None, labels={"app": "web"}),
    ]
    status = calculate_status(rs, pods, None, NOW)
    assert status == {"replicas": 3, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 1}
    failed = calculate_status(rs, pods[:2], RuntimeError('pods "x" is forbidden: exceeded quota'), NOW)
    (cond,) = failed["conditions"]
    assert (cond["type"], cond["reason"], cond["message"]) == (
        "ReplicaFailure",
        "FailedCreate",
        'pods "x" is forbidden: exceeded quota',
    )
    assert "conditions" not in calculate_status({**rs, "status": failed}, pods, None, NOW)
