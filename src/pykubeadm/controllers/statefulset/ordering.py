"""What one StatefulSet sync does next, as kube's defaultStatefulSetControl.updateStatefulSet decides it (pure).

`plan` splits the set's Pods into replicas (ordinals `start … start+replicas-1`) and condemned ones, then:
1. replicas in ascending order: a missing Pod is created (from the current revision below the RollingUpdate
   partition, else from the update revision), a finished one (Succeeded/Failed) deleted to be re-created; with
   `OrderedReady` the sync stops at the first Pod created, terminating, not Running and Ready, or not yet available
   for `minReadySeconds` — with `Parallel` it goes on;
2. condemned Pods, highest ordinal first: deleted (with `OrderedReady` one at a time, and only when every other Pod
   is healthy, or it is the first unhealthy one);
3. RollingUpdate (not OnDelete): from the highest ordinal down to the partition, a Pod not of the update revision
   is deleted (the next sync re-creates it from the update revision) — one at a time, waiting for each to be healthy
   again; with `maxUnavailable` up to that many Pods may be unavailable at once.
`compute_status` is kube's status (replicas, ready/available/current/updated replicas, revisions), the rollout being
complete once every Pod is updated and ready.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pykubeadm.controllers.controllerutil import is_pod_available, is_pod_ready, scaled_value
from pykubeadm.controllers.statefulset.identity import ordinal_of, pod_revision, start_ordinal

__all__ = ["Plan", "Step", "compute_status", "is_healthy", "plan"]

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Step:
    """Create the Pod of `ordinal` (from the `current` or the update revision), or delete `pod`."""

    action: str  # "create" | "delete"
    ordinal: int
    current: bool = False
    pod: Obj | None = None
    condemned: bool = False


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)
    #: why the sync stops here (kube's "StatefulSet … is waiting for Pod … to be Running and Ready"), or ""
    waiting: str = ""
    #: a Pod is Ready but not yet available: look again after minReadySeconds
    recheck_after: float = 0.0


def _terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _finished(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _running_and_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and is_pod_ready(pod)


def is_healthy(pod: Obj) -> bool:
    return _running_and_ready(pod) and not _terminating(pod)


def _name(pod: Obj) -> str:
    return str((pod.get("metadata") or {}).get("name"))


def plan(sts: Obj, pods: Sequence[Obj], current_revision: str, update_revision: str, now: datetime) -> Plan:
    spec = sts.get("spec") or {}
    set_name = (sts.get("metadata") or {}).get("name")
    replicas = int(spec.get("replicas", 1))
    start = start_ordinal(sts)
    monotonic = spec.get("podManagementPolicy") != "Parallel"
    min_ready = int(spec.get("minReadySeconds") or 0)
    strategy = spec.get("updateStrategy") or {}
    rolling = strategy.get("type", "RollingUpdate") == "RollingUpdate"
    partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
    slots: list[Obj | None] = [None] * replicas
    condemned: list[tuple[int, Obj]] = []
    for pod in pods:
        ordinal = ordinal_of(sts, pod)
        if ordinal is None:
            continue
        if start <= ordinal < start + replicas:
            slots[ordinal - start] = pod
        else:
            condemned.append((ordinal, pod))
    condemned.sort(key=lambda item: -item[0])
    unhealthy = [p for p in slots if p is not None and not is_healthy(p)] + [
        p for _, p in reversed(condemned) if not is_healthy(p)
    ]  # in ascending ordinal order, as kube looks for the first unhealthy Pod
    first_unhealthy = unhealthy[0] if unhealthy else None
    result = Plan()

    def wait(pod: Obj, what: str) -> Plan:
        result.waiting = f"StatefulSet {set_name} is waiting for Pod {_name(pod)} to {what}"
        return result

    for index, slot in enumerate(slots):
        ordinal = start + index
        if slot is None or (_finished(slot) and not _terminating(slot)):
            if slot is not None:
                result.steps.append(Step("delete", ordinal, pod=slot))  # recreate a finished Pod
            current = rolling and ordinal < start + partition and current_revision != update_revision
            result.steps.append(Step("create", ordinal, current=current))
            if monotonic:
                return result
            continue
        pod = slot
        if _terminating(pod):
            if monotonic:
                return wait(pod, "Terminate")
            continue
        if not _running_and_ready(pod):
            if monotonic:
                return wait(pod, "be Running and Ready")
            continue
        if not is_pod_available(pod, min_ready, now):
            result.recheck_after = float(min_ready)
            if monotonic:
                return wait(pod, "be Available")
    for ordinal, pod in condemned:
        if _terminating(pod):
            if monotonic:
                return wait(pod, "Terminate")
            continue
        if monotonic and not _running_and_ready(pod) and pod is not first_unhealthy:
            return wait(pod, "be Running and Ready prior to scale down")
        result.steps.append(Step("delete", ordinal, pod=pod, condemned=True))
        if monotonic:
            return result
    if not rolling or result.steps:
        return result
    return _rolling_update(result, slots, start, partition, update_revision, strategy)


def _rolling_update(
    result: Plan, slots: list[Obj | None], start: int, partition: int, update_revision: str, strategy: Obj
) -> Plan:
    max_unavailable_raw = (strategy.get("rollingUpdate") or {}).get("maxUnavailable")
    present = [p for p in slots if p is not None]
    if max_unavailable_raw is None:
        for index in range(len(slots) - 1, max(partition, 0) - 1, -1):
            pod = slots[index]
            if pod is None:
                continue
            if pod_revision(pod) != update_revision and not _terminating(pod):
                result.steps.append(Step("delete", start + index, pod=pod))
                return result
            if not is_healthy(pod):
                result.waiting = f"StatefulSet is waiting for Pod {_name(pod)} to update"
                return result
        return result
    max_unavailable = max(1, scaled_value(max_unavailable_raw, len(slots), True))
    unavailable = sum(1 for p in present if not is_healthy(p))
    for index in range(len(slots) - 1, max(partition, 0) - 1, -1):
        pod = slots[index]
        if pod is None or pod_revision(pod) == update_revision or _terminating(pod):
            continue
        if unavailable >= max_unavailable:
            result.waiting = f"StatefulSet is waiting for Pod {_name(pod)} to update: {unavailable} unavailable"
            break
        result.steps.append(Step("delete", start + index, pod=pod))
        if is_healthy(pod):
            unavailable += 1
    return result


def compute_status(
    sts: Obj, pods: Sequence[Obj], current_revision: str, update_revision: str, now: datetime
) -> dict[str, Any]:
    """The set's status as kube writes it (observedGeneration and collisionCount are added by the caller)."""
    spec = sts.get("spec") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    counts = dict.fromkeys(("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"), 0)
    for pod in pods:
        if not (pod.get("status") or {}).get("phase"):
            continue
        counts["replicas"] += 1
        if _running_and_ready(pod):
            counts["readyReplicas"] += 1
            if is_pod_available(pod, min_ready, now):
                counts["availableReplicas"] += 1
        if not _terminating(pod):
            revision = pod_revision(pod)
            if revision == current_revision:
                counts["currentReplicas"] += 1
            if revision == update_revision:
                counts["updatedReplicas"] += 1
    status: dict[str, Any] = {**counts, "currentRevision": current_revision, "updateRevision": update_revision}
    rolling = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
    if rolling and counts["updatedReplicas"] == counts["replicas"] == counts["readyReplicas"]:
        status["currentRevision"] = update_revision  # completeRollingUpdate
        status["currentReplicas"] = counts["updatedReplicas"]
    return status
