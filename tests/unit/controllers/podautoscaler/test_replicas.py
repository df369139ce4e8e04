"""kube's replica calculator (replica_calculator.go) and behavior normalization (horizontal.go), on their own."""

from __future__ import annotations

from typing import Any

import pytest

from pykubeadm.controllers.podautoscaler.behavior import Normalizer, default_behavior
from pykubeadm.controllers.podautoscaler.replicas import (
    PodMetric,
    ReplicaError,
    raw_replicas,
    resource_replicas,
)

NOW = 1_769_904_000.0  # 2026-02-01T00:00:00Z
LONG_AGO = "2026-01-01T00:00:00Z"  # started and ready long before NOW: past the CPU initialization period


def pod(name: str, cpu: str | None = "100m", phase: str = "Running", ready: str = "True", **extra: Any) -> dict:
    requests = {"cpu": cpu} if cpu is not None else {}
    return {
        "metadata": {"name": name, **extra},
        "spec": {"containers": [{"name": "web", "resources": {"requests": requests}}]},
        "status": {
            "phase": phase,
            "startTime": LONG_AGO,
            "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": LONG_AGO}],
        },
    }


def m(value: int) -> PodMetric:
    return PodMetric(value, NOW - 5, 15.0)


def test_utilization_above_target_scales_up_by_the_ratio() -> None:
    pods = [pod("a"), pod("b")]
    p = resource_replicas(2, 50, "cpu", pods, {"a": m(100), "b": m(100)}, NOW)
    assert (p.replicas, p.utilization, p.raw) == (4, 100, 100)


def test_within_tolerance_keeps_the_current_count() -> None:
    pods = [pod("a"), pod("b")]
    assert resource_replicas(2, 50, "cpu", pods, {"a": m(54), "b": m(54)}, NOW).replicas == 2
    assert resource_replicas(2, 50, "cpu", pods, {"a": m(40), "b": m(40)}, NOW).replicas == 2  # 20 % off: scales
    assert resource_replicas(2, 50, "cpu", pods, {"a": m(20), "b": m(20)}, NOW).replicas == 1


def test_a_container_without_request_is_kubes_error() -> None:
    with pytest.raises(ReplicaError, match=r"^missing request for cpu in container web of Pod b$"):
        resource_replicas(2, 50, "cpu", [pod("a"), pod("b", cpu=None)], {"a": m(10), "b": m(10)}, NOW)


def test_missing_metrics_count_as_full_use_when_scaling_down() -> None:
    # a: 10 % of its request; b has no metric: assumed at 100 % → new ratio (10 + 100)/2/50 = 1.1 → no change
    p = resource_replicas(2, 50, "cpu", [pod("a"), pod("b")], {"a": m(10)}, NOW)
    assert p.replicas == 2 and p.utilization == 10


def test_unready_pods_count_as_idle_when_scaling_up() -> None:
    # a at 200 % of its request; b and c are Pending, counted at 0 when scaling up: (100 + 0 + 0) / 300 = 33 %,
    # below the 50 % target — the direction would reverse, so the count stays
    pods = [pod("a"), pod("b", phase="Pending"), pod("c", phase="Pending")]
    assert resource_replicas(2, 50, "cpu", pods, {"a": m(100)}, NOW).replicas == 2
    # one Pending Pod at 0: (100 + 0) / 200 = 50 %, twice a 25 % target → ceil(2 × 2) = 4
    assert resource_replicas(2, 25, "cpu", pods[:2], {"a": m(100)}, NOW).replicas == 4


def test_cpu_of_a_pod_ready_for_less_than_a_window_is_not_counted() -> None:
    fresh = pod("a")
    just = "2026-01-31T23:59:55Z"  # ready 5 s before NOW; the metric's window is 15 s
    fresh["status"]["startTime"] = just
    fresh["status"]["conditions"][0]["lastTransitionTime"] = just
    with pytest.raises(ReplicaError, match="did not receive metrics"):
        resource_replicas(1, 50, "cpu", [fresh], {"a": m(100)}, NOW)


def test_deleted_and_failed_pods_are_ignored() -> None:
    pods = [pod("a"), pod("b", phase="Failed"), pod("c", deletionTimestamp=LONG_AGO)]
    assert resource_replicas(3, 50, "cpu", pods, {"a": m(100), "b": m(0), "c": m(0)}, NOW).replicas == 2


def test_no_pods_and_no_metrics_are_errors() -> None:
    with pytest.raises(ReplicaError, match="no pods returned by selector while calculating replica count"):
        resource_replicas(1, 50, "cpu", [], {}, NOW)
    with pytest.raises(ReplicaError, match=r"did not receive metrics for targeted pods \(pods might be unready\)"):
        resource_replicas(1, 50, "cpu", [pod("a", phase="Pending")], {}, NOW)


def test_average_value_targets() -> None:
    pods = [pod("a"), pod("b")]
    p = raw_replicas(2, 100, "cpu", pods, {"a": m(300), "b": m(100)}, NOW)
    assert (p.replicas, p.raw, p.utilization) == (4, 200, None)


def test_without_behavior_scale_down_waits_for_the_stabilization_window() -> None:
    n = Normalizer(downscale_window=300)
    n.record_initial("k", 4, NOW)
    out, able, limited = n.normalize("k", 4, 1, 1, 10, NOW + 10)
    assert out == 4 and able[0] == "ScaleDownStabilized"
    assert limited == ("False", "DesiredWithinRange", "the desired count is within the acceptable range")
    out, able, _ = n.normalize("k", 4, 1, 1, 10, NOW + 320)
    assert out == 1 and able == ("ReadyForNewScale", "recommended size matches current size")


def test_without_behavior_scale_up_is_limited_to_double_or_four() -> None:
    n = Normalizer()
    out, _, limited = n.normalize("k", 1, 10, 1, 10, NOW)
    assert out == 4 and limited[:2] == ("True", "ScaleUpLimit")
    out, _, limited = n.normalize("k", 4, 20, 1, 5, NOW)
    assert out == 5 and limited[:2] == ("True", "TooManyReplicas")


def test_behavior_defaults_and_policies() -> None:
    behavior = default_behavior({}, 300)
    assert behavior["scaleUp"]["policies"][0] == {"type": "Pods", "value": 4, "periodSeconds": 15}
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 300
    n = Normalizer()
    out, _, limited = n.normalize_with_behavior("k", behavior, 10, 100, 1, 100, NOW)
    assert out == 20 and limited[:2] == ("True", "ScaleUpLimit")  # max(10 + 4, 10 × 2)
    n.store_scale_event("k", behavior, 10, 20, NOW)
    out, _, limited = n.normalize_with_behavior("k", behavior, 20, 100, 1, 100, NOW + 5)
    assert out == 20 and limited[:2] == ("True", "ScaleUpLimit")  # the period's budget is spent
    out, _, _ = n.normalize_with_behavior("k", behavior, 20, 100, 1, 100, NOW + 16)
    assert out == 40


def test_behavior_select_policy_min_and_disabled() -> None:
    rules = {"selectPolicy": "Min", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60},
                                                 {"type": "Percent", "value": 50, "periodSeconds": 60}]}  # fmt: skip
    behavior = default_behavior({"scaleUp": rules}, 300)
    out, _, _ = Normalizer().normalize_with_behavior("k", behavior, 4, 10, 1, 10, NOW)
    assert out == 5
    behavior = default_behavior({"scaleDown": {"selectPolicy": "Disabled"}}, 300)
    out, _, limited = Normalizer().normalize_with_behavior("k", behavior, 4, 1, 1, 10, NOW)
    assert out == 4 and limited[:2] == ("True", "ScaleDownLimit")


def test_behavior_scale_down_stabilization_window() -> None:
    behavior = default_behavior({"scaleDown": {"stabilizationWindowSeconds": 30}}, 300)
    n = Normalizer()
    n.record_initial("k", 4, NOW)
    out, able, _ = n.normalize_with_behavior("k", behavior, 4, 1, 1, 10, NOW + 10)
    assert out == 4 and able[0] == "ScaleDownStabilized"
    out, able, _ = n.normalize_with_behavior("k", behavior, 4, 1, 1, 10, NOW + 45)
    assert out == 1 and able[0] == "ReadyForNewScale"
