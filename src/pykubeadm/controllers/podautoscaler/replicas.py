"""kube's replica calculator (replica_calculator.go) for Resource and ContainerResource metrics.

Pure functions over Pods (dicts) and per-Pod metric values (milli-units): `group_pods` sorts Pods into ready,
unready (Pending, or for CPU not yet ready within the initialization period), missing (no metric) and ignored
(deleted or Failed); `resource_replicas` (utilization of requests) and `raw_replicas` (average value) compute the
proposal with the tolerance, filling missing Pods conservatively (100 % or the target when scaling down, 0 when
scaling up) and unready Pods with 0 when scaling up, and never reversing the direction. Errors carry kube's messages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pykubeadm.util.apitime import parse_time
from pykubeadm.util.quantity import parse_quantity

__all__ = [
    "PodMetric",
    "Proposal",
    "ReplicaError",
    "calculate_requests",
    "group_pods",
    "raw_replicas",
    "resource_replicas",
]

#: kube's defaults: --horizontal-pod-autoscaler-tolerance, -cpu-initialization-period, -initial-readiness-delay.
TOLERANCE = 0.1
CPU_INITIALIZATION_PERIOD = 300.0
INITIAL_READINESS_DELAY = 30.0


class ReplicaError(Exception):
    """The replica count cannot be computed; the message is kube's."""


@dataclass(frozen=True)
class PodMetric:
    """A Pod's usage in milli-units (sum of its containers', or one container's), when and over what window."""

    value: int
    timestamp: float = 0.0
    window: float = 0.0


@dataclass(frozen=True)
class Proposal:
    replicas: int
    #: utilization in percent of requests (Resource utilization targets), else None
    utilization: int | None
    #: the average raw value in milli-units
    raw: int


@dataclass
class _Groups:
    ready: int = 0
    unready: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)
    ignored: set[str] = field(default_factory=set)


def _ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond
    return None


def group_pods(
    pods: Sequence[Mapping[str, Any]],
    metrics: Mapping[str, PodMetric],
    resource: str,
    now: float,
    cpu_initialization_period: float = CPU_INITIALIZATION_PERIOD,
    initial_readiness_delay: float = INITIAL_READINESS_DELAY,
) -> _Groups:
    g = _Groups()
    for pod in pods:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        name = meta.get("name", "")
        if meta.get("deletionTimestamp") or status.get("phase") == "Failed":
            g.ignored.add(name)
            continue
        if status.get("phase") == "Pending":
            g.unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            g.missing.add(name)
            continue
        if resource == "cpu":
            cond = _ready_condition(pod)
            start = parse_time(status.get("startTime"))
            if cond is None or start is None:
                unready = True
            else:
                changed = parse_time(cond.get("lastTransitionTime"))
                changed_at = changed.timestamp() if changed is not None else 0.0
                if start.timestamp() + cpu_initialization_period > now:
                    unready = cond.get("status") == "False" or metric.timestamp < changed_at + metric.window
                else:
                    unready = cond.get("status") == "False" and start.timestamp() + initial_readiness_delay > changed_at
            if unready:
                g.unready.add(name)
                continue
        g.ready += 1
    return g


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    out = list(spec.get("containers") or [])
    out += [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    return out


def calculate_requests(pods: Sequence[Mapping[str, Any]], container: str, resource: str) -> dict[str, int]:
    """Pod name → the request of `resource` (milli-units) of its containers (or of `container`)."""
    out: dict[str, int] = {}
    for pod in pods:
        total = 0
        for c in _containers(pod):
            if container and c.get("name") != container:
                continue
            request = ((c.get("resources") or {}).get("requests") or {}).get(resource)
            value = parse_quantity(str(request)) if request is not None else 0
            if value == 0:
                raise ReplicaError(
                    f"missing request for {resource} in container {c.get('name')} of Pod {pod['metadata']['name']}"
                )
            total += math.ceil(value * 1000)
        out[pod["metadata"]["name"]] = total
    return out


def _utilization_ratio(
    metrics: Mapping[str, PodMetric], requests: Mapping[str, int], target: int
) -> tuple[float, int, int]:
    total = requests_total = entries = 0
    for name, metric in metrics.items():
        if name not in requests:
            continue
        total += metric.value
        requests_total += requests[name]
        entries += 1
    if requests_total == 0:
        raise ReplicaError("no metrics returned matched known pods")
    utilization = total * 100 // requests_total
    return utilization / target, utilization, total // entries


def _usage_ratio(metrics: Mapping[str, PodMetric], target: int) -> tuple[float, int]:
    usage = sum(m.value for m in metrics.values()) // len(metrics)
    return usage / target, usage


def _prepare(
    pods: Sequence[Mapping[str, Any]], metrics: dict[str, PodMetric], resource: str, now: float, **periods: float
) -> _Groups:
    if not pods:
        raise ReplicaError("no pods returned by selector while calculating replica count")
    groups = group_pods(pods, metrics, resource, now, **periods)
    for name in groups.ignored | groups.unready:
        metrics.pop(name, None)
    if not metrics:
        raise ReplicaError("did not receive metrics for targeted pods (pods might be unready)")
    return groups


def _propose(
    current: int,
    groups: _Groups,
    metrics: dict[str, PodMetric],
    ratio_of: Callable[[Mapping[str, PodMetric]], float],
    fallback: Callable[[str], int],
    tolerance: float,
) -> int:
    """The replica count for `ratio_of(metrics)`; missing Pods at `fallback` (scaling down) or 0 (scaling up), unready
    Pods at 0 when scaling up; no change within the tolerance or when the filled-in ratio reverses the direction."""
    ratio = ratio_of(metrics)
    up_with_unready = bool(groups.unready) and ratio > 1.0
    if not up_with_unready and not groups.missing:
        return current if abs(1.0 - ratio) <= tolerance else math.ceil(ratio * groups.ready)
    for name in groups.missing:
        metrics[name] = PodMetric(fallback(name) if ratio < 1.0 else 0)
    if up_with_unready:
        for name in groups.unready:
            metrics[name] = PodMetric(0)
    new_ratio = ratio_of(metrics)
    if abs(1.0 - new_ratio) <= tolerance or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current
    replicas = math.ceil(new_ratio * len(metrics))
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current
    return replicas


def resource_replicas(
    current: int,
    target_utilization: int,
    resource: str,
    pods: Sequence[Mapping[str, Any]],
    pod_metrics: Mapping[str, PodMetric],
    now: float,
    *,
    container: str = "",
    tolerance: float = TOLERANCE,
    **periods: float,
) -> Proposal:
    """GetResourceReplicas: the proposal for a utilization target (percent of requests)."""
    metrics = dict(pod_metrics)
    groups = _prepare(pods, metrics, resource, now, **periods)
    requests = calculate_requests(pods, container, resource)
    _, utilization, raw = _utilization_ratio(metrics, requests, target_utilization)
    fallback = max(100, target_utilization)
    replicas = _propose(
        current,
        groups,
        metrics,
        lambda ms: _utilization_ratio(ms, requests, target_utilization)[0],
        lambda name: requests[name] * fallback // 100,
        tolerance,
    )
    return Proposal(replicas, utilization, raw)


def raw_replicas(
    current: int,
    target_value: int,
    resource: str,
    pods: Sequence[Mapping[str, Any]],
    pod_metrics: Mapping[str, PodMetric],
    now: float,
    *,
    tolerance: float = TOLERANCE,
    **periods: float,
) -> Proposal:
    """GetRawResourceReplicas: the proposal for an average value target (milli-units per Pod)."""
    metrics = dict(pod_metrics)
    groups = _prepare(pods, metrics, resource, now, **periods)
    _, usage = _usage_ratio(metrics, target_value)
    replicas = _propose(
        current, groups, metrics, lambda ms: _usage_ratio(ms, target_value)[0], lambda _: target_value, tolerance
    )
    return Proposal(replicas, None, usage)
