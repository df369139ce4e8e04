"""Taint-based eviction timing, pod GC selections and MarkPodsNotReady, with the clock passed in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pykubeadm.controllers.nodelifecycle.controller import mark_pod_not_ready
from pykubeadm.controllers.podgc.controller import (
    orphaned_pods,
    out_of_service_terminating_pods,
    terminated_pods_to_delete,
    unscheduled_terminating_pods,
)
from pykubeadm.controllers.tainteviction.controller import (
    IMMEDIATELY,
    eviction_time,
    min_toleration_seconds,
    tolerates,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-01-01T12:00:00Z"}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}


def pod(*tolerations: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1", "tolerations": list(tolerations)}}


def tol(key: str = "node.kubernetes.io/unreachable", seconds: int | None = None, **kw: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"key": key, "operator": "Exists", "effect": "NoExecute", **kw}
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


def test_untolerated_taint_evicts_at_once() -> None:
    assert eviction_time(pod(), [UNREACHABLE], NOW) == IMMEDIATELY
    assert eviction_time(pod(tol("other")), [UNREACHABLE], NOW) == IMMEDIATELY


def test_toleration_seconds_count_from_the_taints_time_added() -> None:
    assert eviction_time(pod(tol(seconds=2)), [UNREACHABLE], NOW + timedelta(seconds=1)) == NOW + timedelta(seconds=2)


def test_taint_without_time_added_counts_from_first_seen() -> None:
    seen = NOW + timedelta(seconds=7)
    assert eviction_time(pod(tol("node.kubernetes.io/not-ready", 5)), [NOT_READY], seen) == seen + timedelta(seconds=5)


def test_tolerating_forever_never_evicts_and_no_taints_never_evict() -> None:
    assert eviction_time(pod(tol()), [UNREACHABLE], NOW) is None
    assert eviction_time(pod(), [], NOW) is None


def test_smallest_toleration_of_several_taints_wins() -> None:
    p = pod(tol(seconds=300), tol("node.kubernetes.io/not-ready", 10))
    assert eviction_time(p, [UNREACHABLE, {**NOT_READY, "timeAdded": "2026-01-01T12:00:00Z"}], NOW) == NOW + timedelta(
        seconds=10
    )


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        ({"operator": "Exists"}, UNREACHABLE, True),  # empty key + Exists tolerates everything
        ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoExecute"}, True),
        ({"key": "k", "value": "v"}, {"key": "k", "value": "w", "effect": "NoExecute"}, False),
        ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, {"key": "k", "effect": "NoExecute"}, False),
        ({"key": "k", "operator": "Bogus"}, {"key": "k", "effect": "NoExecute"}, False),
    ],
)
def test_tolerates(toleration: dict[str, Any], taint: dict[str, Any], expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


def test_min_toleration_seconds() -> None:
    assert min_toleration_seconds([]) == 0
    assert min_toleration_seconds([tol()]) == -1
    assert min_toleration_seconds([tol(seconds=-5), tol(seconds=30)]) == 0
    assert min_toleration_seconds([tol(), tol(seconds=30), tol(seconds=20)]) == 20


def gc_pod(name: str, phase: str = "Running", node: str = "n1", created: str = "2026-01-01T00:00:00Z", **meta: Any):
    return {
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": created, **meta},
        "spec": {"nodeName": node},
        "status": {"phase": phase},
    }


def test_terminated_pods_over_threshold_evicted_first_then_oldest() -> None:
    pods = [
        gc_pod("old", "Succeeded", created="2026-01-01T00:00:01Z"),
        gc_pod("new", "Failed", created="2026-01-01T00:00:09Z"),
        gc_pod("mid", "Succeeded", created="2026-01-01T00:00:05Z"),
        gc_pod("evicted", "Failed", created="2026-01-01T00:00:08Z"),
        gc_pod("running"),
    ]
    pods[3]["status"]["reason"] = "Evicted"
    assert [p["metadata"]["name"] for p in terminated_pods_to_delete(pods, 2)] == ["evicted", "old"]
    assert terminated_pods_to_delete(pods, 4) == []
    assert terminated_pods_to_delete(pods, 0) == []  # 0 disables


def test_orphaned_unscheduled_and_out_of_service() -> None:
    orphan = gc_pod("orphan", node="gone")
    unscheduled = gc_pod("u", node="", deletionTimestamp="2026-01-01T00:00:00Z")
    terminating = gc_pod("t", node="n2", deletionTimestamp="2026-01-01T00:00:00Z")
    pods = [gc_pod("ok"), orphan, unscheduled, terminating]
    assert orphaned_pods(pods, {"n1", "n2"}) == [orphan]
    assert unscheduled_terminating_pods(pods) == [unscheduled]
    oos = {"spec": {"taints": [{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}]}, "status": {}}
    assert out_of_service_terminating_pods(pods, {"n1": {}, "n2": oos}) == [terminating]
    ready = {**oos, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert out_of_service_terminating_pods(pods, {"n2": ready}) == []


def test_mark_pod_not_ready() -> None:
    p = {"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "x"}]}}
    new = mark_pod_not_ready(p, NOW)
    assert new is not None and new["status"]["conditions"] == [
        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T12:00:00Z"}
    ]
    assert mark_pod_not_ready(new, NOW) is None
    assert p["status"]["conditions"][0]["status"] == "True"  # input untouched
