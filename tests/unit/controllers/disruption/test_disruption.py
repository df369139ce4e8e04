"""PodDisruptionBudget status math: expected/desired/current healthy, rounding, disruptedPods expiry, conditions."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pykubeadm.controllers.disruption.controller import (
    Scale,
    build_disrupted_pod_map,
    count_healthy_pods,
    expected_pod_count,
    fail_safe_status,
    new_status,
    pods_for_pdb,
    stale_disruption_wait,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, ready: bool = True, owner: str | None = "rs-uid", **meta: Any) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "ns", "labels": {"app": "web"}, **meta}
    if owner:
        md["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": owner, "controller": True}
        ]
    return {
        "metadata": md,
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pdb(spec: dict[str, Any], status: dict[str, Any] | None = None, generation: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": "pdb", "namespace": "ns", "generation": generation},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
        "status": status or {},
    }


def scales(**by_uid: int):
    async def finder(ref: dict[str, Any], namespace: str) -> Scale | None:
        uid = ref["uid"]
        return Scale(uid, by_uid[uid]) if uid in by_uid else None

    return finder


def count(spec: dict[str, Any], pods: list[dict[str, Any]], **by_uid: int) -> tuple[int, int, list[str]]:
    return asyncio.run(expected_pod_count(pdb(spec), pods, scales(**by_uid)))


def test_min_available_int_counts_the_selected_pods() -> None:
    pods = [pod("a"), pod("b"), pod("c")]
    assert count({"minAvailable": 2}, pods) == (3, 2, [])


@pytest.mark.parametrize(
    ("spec", "replicas", "expected", "desired"),
    [
        ({"minAvailable": "50%"}, 3, 3, 2),  # ceil(1.5)
        ({"minAvailable": "34%"}, 3, 3, 2),  # ceil(1.02)
        ({"minAvailable": "100%"}, 5, 5, 5),
        ({"maxUnavailable": 1}, 3, 3, 2),
        ({"maxUnavailable": "50%"}, 3, 3, 1),  # 3 - ceil(1.5)
        ({"maxUnavailable": "10%"}, 5, 5, 4),  # 5 - ceil(0.5)
        ({"maxUnavailable": 7}, 3, 3, 0),  # never negative
    ],
)
def test_percentages_and_max_unavailable_use_the_controller_scale_rounded_up(
    spec: dict[str, Any], replicas: int, expected: int, desired: int
) -> None:
    pods = [pod("a"), pod("b")]  # the controller wants more than currently exist
    assert count(spec, pods, **{"rs-uid": replicas})[:2] == (expected, desired)


def test_scale_of_one_controller_counted_once_and_unmanaged_pods_reported() -> None:
    pods = [pod("a"), pod("b"), pod("c", owner=None)]
    assert count({"maxUnavailable": 1}, pods, **{"rs-uid": 4}) == (4, 3, ["c"])


def test_missing_controller_is_an_error() -> None:
    with pytest.raises(ValueError, match='found no controllers for pod "a"'):
        count({"minAvailable": "50%"}, [pod("a")])


def test_selector_picks_pods_of_the_namespace() -> None:
    other_ns = pod("x")
    other_ns["metadata"]["namespace"] = "other"
    other_label = pod("y")
    other_label["metadata"]["labels"] = {"app": "db"}
    assert [p["metadata"]["name"] for p in pods_for_pdb(pdb({}), [pod("a"), other_ns, other_label])] == ["a"]
    everything = pdb({})
    everything["spec"]["selector"] = {}
    assert len(pods_for_pdb(everything, [pod("a"), other_label])) == 2


def test_healthy_excludes_unready_deleting_and_recently_disrupted_pods() -> None:
    pods = [pod("a"), pod("b", ready=False), pod("c", deletionTimestamp=ts(NOW)), pod("d"), pod("e")]
    disrupted = {"d": ts(NOW - timedelta(seconds=30)), "e": ts(NOW - timedelta(minutes=3))}
    assert count_healthy_pods(pods, disrupted, NOW) == 2  # a, and e whose entry expired


def test_disrupted_pods_expire_after_two_minutes_with_a_recheck_time() -> None:
    status = {
        "disruptedPods": {"a": ts(NOW - timedelta(seconds=30)), "b": ts(NOW - timedelta(minutes=3)), "gone": ts(NOW)}
    }
    pods = [pod("a"), pod("b")]
    kept, recheck, not_deleted = build_disrupted_pod_map(pdb({}, status), pods, NOW)
    assert kept == {"a": status["disruptedPods"]["a"]}
    assert recheck == NOW + timedelta(seconds=90)
    assert [p["metadata"]["name"] for p in not_deleted] == ["b"]


def test_status_sufficient_then_insufficient_pods() -> None:
    status = new_status(pdb({"minAvailable": 2}), 3, 2, 3, {}, NOW)
    assert status is not None
    assert (status["disruptionsAllowed"], status["currentHealthy"], status["desiredHealthy"]) == (1, 3, 2)
    assert status["expectedPods"] == 3 and status["observedGeneration"] == 1
    (cond,) = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("DisruptionAllowed", "True", "SufficientPods")
    assert cond["lastTransitionTime"] == ts(NOW)
    # unchanged → no write
    assert new_status(pdb({"minAvailable": 2}, status), 3, 2, 3, {}, NOW) is None
    later = NOW + timedelta(seconds=5)
    after = new_status(pdb({"minAvailable": 2}, status), 2, 2, 3, {"a": ts(NOW)}, later)
    assert after is not None
    assert after["disruptionsAllowed"] == 0 and after["disruptedPods"] == {"a": ts(NOW)}
    (cond,) = after["conditions"]
    assert (cond["status"], cond["reason"], cond["lastTransitionTime"]) == ("False", "InsufficientPods", ts(later))


def test_no_disruptions_while_no_pods_are_expected() -> None:
    status = new_status(pdb({"maxUnavailable": 1}), 0, 0, 0, {}, NOW)
    assert status is not None and status["disruptionsAllowed"] == 0


def test_generation_change_rewrites_status() -> None:
    status = new_status(pdb({"minAvailable": 1}), 2, 1, 2, {}, NOW)
    assert new_status(pdb({"minAvailable": 1}, status, generation=2), 2, 1, 2, {}, NOW) is not None


def test_fail_safe_sets_sync_failed() -> None:
    current = new_status(pdb({"minAvailable": 1}), 2, 1, 2, {}, NOW)
    status = fail_safe_status(pdb({"minAvailable": "50%"}, current), 'found no controllers for pod "a"', NOW)
    assert status["disruptionsAllowed"] == 0
    (cond,) = status["conditions"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "SyncFailed",
        'found no controllers for pod "a"',
    )


def test_stale_disruption_target_condition() -> None:
    def with_condition(**cond: Any) -> dict[str, Any]:
        p = pod("a")
        p["status"]["conditions"].append({"type": "DisruptionTarget", "status": "True", **cond})
        return p

    fresh = with_condition(reason="EvictionByEvictionAPI", lastTransitionTime=ts(NOW - timedelta(seconds=30)))
    assert stale_disruption_wait(fresh, NOW) == timedelta(seconds=90)
    old = with_condition(reason="EvictionByEvictionAPI", lastTransitionTime=ts(NOW - timedelta(minutes=5)))
    assert stale_disruption_wait(old, NOW) == timedelta(0)
    assert stale_disruption_wait(with_condition(reason="TerminationByKubelet"), NOW) is None
    deleting = with_condition(lastTransitionTime=ts(NOW))
    deleting["metadata"]["deletionTimestamp"] = ts(NOW)
    assert stale_disruption_wait(deleting, NOW) is None
    assert stale_disruption_wait(pod("b"), NOW) is None
