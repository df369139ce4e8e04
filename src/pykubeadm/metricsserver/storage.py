"""The metrics server's storage: the last two points per node and per container, turned into usage.

As metrics-server's storage: each scrape's points (slotted objects: what is kept grows with the number of containers)
replace the older of the two kept, and usage is the CPU rate between them (cumulative core-seconds over their
interval, in nanocores) and the later working set; `window` is that interval and `timestamp` the later point's time.
A container that restarted between the two points (its start time moved past the earlier point) is rated from its
start. A node or Pod seen in only one scrape has no usage yet; a Pod is served only when every container it reported
has usage. Quantities are formatted as apimachinery's canonical form: CPU `NewScaledQuantity(nanocores, -9)`
(`2295417n`, `5m`), memory `NewQuantity(bytes, BinarySI)` (`12764Ki`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from pykubeadm.metricsserver.scrape import ContainerPoint, MetricsBatch, NodePoint

__all__ = ["MetricsStorage", "Usage", "format_cpu", "format_memory"]

P = TypeVar("P", NodePoint, ContainerPoint)
_DECIMAL_SUFFIXES = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""), (-3, "m"), (-6, "u"))
_BINARY_SUFFIXES = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))


def format_cpu(nanocores: int) -> str:
    """A CPU quantity of `nanocores` in canonical decimal form: the largest suffix that keeps it an integer."""
    if nanocores == 0:
        return "0"
    for exp, suffix in _DECIMAL_SUFFIXES:
        unit = 10 ** (exp + 9)
        if nanocores % unit == 0:
            return f"{nanocores // unit}{suffix}"
    return f"{nanocores}n"


def format_memory(size: int) -> str:
    """A byte quantity in canonical binary form (`1Mi`, `12764Ki`), plain bytes when not a multiple of 1024."""
    if size == 0:
        return "0"
    for shift, suffix in _BINARY_SUFFIXES:
        if size % (1 << shift) == 0:
            return f"{size >> shift}{suffix}"
    return str(size)


@dataclass(frozen=True, slots=True)
class Usage:
    """Usage over `window` seconds ending at `timestamp`: CPU nanocores and memory bytes."""

    timestamp: float
    window: float
    cpu: int
    memory: int


def _rate(prev: NodePoint | ContainerPoint, last: NodePoint | ContainerPoint) -> Usage | None:
    if prev.cpu is None or last.cpu is None or last.memory is None:
        return None
    window = last.timestamp - prev.timestamp
    if window <= 0 or last.cpu < prev.cpu:
        return None
    return Usage(last.timestamp, window, int((last.cpu - prev.cpu) / window * 1e9), int(last.memory))


class MetricsStorage:
    """Two points per node and container; `store(batch)` after each scrape."""

    def __init__(self) -> None:
        self._nodes: dict[str, tuple[NodePoint | None, NodePoint]] = {}
        self._pods: dict[tuple[str, str], dict[str, tuple[ContainerPoint | None, ContainerPoint]]] = {}
        self.stored = 0

    def store(self, batch: MetricsBatch) -> None:
        nodes: dict[str, tuple[NodePoint | None, NodePoint]] = {}
        for name, npoint in batch.nodes.items():
            nodes[name] = _advance(self._nodes.get(name), npoint)
        pods: dict[tuple[str, str], dict[str, tuple[ContainerPoint | None, ContainerPoint]]] = {}
        for key, containers in batch.pods.items():
            old_pod = self._pods.get(key, {})
            kept: dict[str, tuple[ContainerPoint | None, ContainerPoint]] = {}
            for name, point in containers.items():
                if point.cpu is None or point.memory is None:
                    continue
                old = old_pod.get(name)
                if old is not None and point.start_time and old[1].start_time != point.start_time:
                    # restarted since: rate it from its start
                    kept[name] = (ContainerPoint(point.start_time, 0.0, 0.0, point.start_time), point)
                else:
                    kept[name] = _advance(old, point)
            if kept:
                pods[key] = kept
        self._nodes, self._pods = nodes, pods
        self.stored += 1

    def ready(self) -> bool:
        """metrics-server's metric-storage-ready: some node has usage (two scrapes have been stored)."""
        return any(prev is not None for prev, _ in self._nodes.values())

    def node_usage(self, name: str) -> Usage | None:
        points = self._nodes.get(name)
        if points is None or points[0] is None:
            return None
        return _rate(points[0], points[1])

    def pod_usage(self, namespace: str, name: str) -> dict[str, Usage] | None:
        """Container name → usage; None unless every container of the Pod has usage."""
        containers = self._pods.get((namespace, name))
        if not containers:
            return None
        out: dict[str, Usage] = {}
        for cname, (prev, last) in containers.items():
            usage = _rate(prev, last) if prev is not None else None
            if usage is None:
                return None
            out[cname] = usage
        return out

    def pod_keys(self) -> list[tuple[str, str]]:
        return list(self._pods)

    def node_names(self) -> list[str]:
        return list(self._nodes)

    def point_count(self) -> int:
        return len(self._nodes) + sum(len(v) for v in self._pods.values())


def _advance(old: tuple[P | None, P] | None, point: P) -> tuple[P | None, P]:
    if old is None:
        return (None, point)
    if point.timestamp <= old[1].timestamp:
        return old  # the kubelet answered with the same measurement: keep the interval we have
    return (old[1], point)
