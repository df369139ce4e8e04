"""Prometheus metrics of kube-controller-manager and kube-scheduler, with the names and labels kube publishes.

`ComponentMetrics` is one component's registry (never prometheus_client's process-global one): the process
collector (process_cpu_seconds_total, process_resident_memory_bytes, ...), leader_election_master_status{name} read
from the elector at scrape time, and client-go's work queue metrics for every queue that asks (`queue(name)`):
workqueue_adds_total, workqueue_depth, workqueue_queue_duration_seconds, workqueue_work_duration_seconds,
workqueue_retries_total, workqueue_unfinished_work_seconds and workqueue_longest_running_processor_seconds, labelled
{name=<controller>}. The queue's hot path is a counter increment and a dict write; the gauges of work in progress
are computed when scraped. Served as GET /metrics by controllers/app/serving.py's HealthServer.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["CONTENT_TYPE", "ComponentMetrics", "QueueMetrics"]

#: The exposition format kube components answer /metrics with.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: client-go's workqueue latency buckets: 10 ns × 10^k, k = 0..9.
_QUEUE_BUCKETS = tuple(10e-9 * 10**k for k in range(10))

disable_created_metrics()  # kube's components expose no `_created` series


class QueueMetrics:
    """One named queue's metrics (client-go's defaultQueueMetrics): labelled children resolved once."""

    def __init__(self, owner: ComponentMetrics, name: str) -> None:
        self.name = name
        self._adds = owner.workqueue_adds.labels(name)
        self._depth = owner.workqueue_depth.labels(name)
        self._retries = owner.workqueue_retries.labels(name)
        self._latency = owner.workqueue_queue_duration.labels(name)
        self._work = owner.workqueue_work_duration.labels(name)
        self._added_at: dict[Hashable, float] = {}
        self._started_at: dict[Hashable, float] = {}

    def add(self, key: Hashable) -> None:
        self._adds.inc()
        self._depth.inc()
        self._added_at.setdefault(key, time.monotonic())

    def get(self, key: Hashable) -> None:
        now = time.monotonic()
        self._depth.dec()
        added = self._added_at.pop(key, None)
        if added is not None:
            self._latency.observe(now - added)
        self._started_at[key] = now

    def done(self, key: Hashable) -> None:
        started = self._started_at.pop(key, None)
        if started is not None:
            self._work.observe(time.monotonic() - started)

    def retry(self) -> None:
        self._retries.inc()

    def in_progress(self, now: float) -> tuple[float, float]:
        """(seconds of unfinished work summed over the items in progress, the longest of them)."""
        ages = [now - t for t in list(self._started_at.values())]
        return sum(ages), max(ages, default=0.0)


class _InProgressCollector(Collector):
    """workqueue_unfinished_work_seconds and workqueue_longest_running_processor_seconds, computed when scraped."""

    def __init__(self, owner: ComponentMetrics) -> None:
        self._owner = owner

    def collect(self) -> Iterable[GaugeMetricFamily]:
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. "
            "Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate "
            "at which this increases.",
            labels=("name",),
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=("name",),
        )
        now = time.monotonic()
        for name, queue in sorted(self._owner.queues.items()):
            total, oldest = queue.in_progress(now)
            unfinished.add_metric((name,), total)
            longest.add_metric((name,), oldest)
        yield unfinished
        yield longest


class _LeaderCollector(Collector):
    """leader_election_master_status{name}: 1 while the elector holds the lease, else 0."""

    def __init__(self) -> None:
        self.electors: dict[str, Any] = {}

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates "
            "master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            labels=("name",),
        )
        for name, elector in sorted(self.electors.items()):
            family.add_metric((name,), 1.0 if elector.is_leader() else 0.0)
        yield family


class ComponentMetrics:
    """A component's own registry with the process, leader-election and work queue metrics."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        ProcessCollector(registry=r)
        self.queues: dict[str, QueueMetrics] = {}  # by name: one per controller, for the process's life
        self.workqueue_adds = Counter(
            "workqueue_adds", "Total number of adds handled by workqueue", ("name",), registry=r
        )
        self.workqueue_depth = Gauge("workqueue_depth", "Current depth of workqueue", ("name",), registry=r)
        self.workqueue_retries = Counter(
            "workqueue_retries", "Total number of retries handled by workqueue", ("name",), registry=r
        )
        self.workqueue_queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            ("name",),
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
        self.workqueue_work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            ("name",),
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
        r.register(_InProgressCollector(self))
        self._leaders = _LeaderCollector()
        r.register(self._leaders)

    def queue(self, name: str) -> QueueMetrics:
        """The metrics of the work queue `name` (the controller's name), created on first use."""
        existing = self.queues.get(name)
        if existing is not None:
            return existing
        queue = QueueMetrics(self, name)
        self.queues[name] = queue
        return queue

    def watch_leader_election(self, name: str, elector: Any) -> None:
        """Report leader_election_master_status{name} from `elector.is_leader()`."""
        self._leaders.electors[name] = elector

    def render(self) -> bytes:
        return generate_latest(self.registry)
