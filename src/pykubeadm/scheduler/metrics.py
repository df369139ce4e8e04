"""kube-scheduler's Prometheus metrics with kube's names: scheduling attempts by result and profile, their latency,
attempts per scheduled Pod, and the pending Pods by queue (read from the scheduler when scraped).

The registry is the component's own (controllers/metrics.ComponentMetrics: process and leader-election series as
well); scheduler.SchedulerController records into it and the secure port serves it at /metrics (scheduler/cli.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from pykubeadm.controllers.metrics import ComponentMetrics

__all__ = ["PENDING_QUEUES", "SchedulerMetrics"]

#: scheduler_pending_pods' queue label values.
PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated")
#: kube's scheduling latency buckets: 1 ms doubling, 15 buckets.
_LATENCY_BUCKETS = tuple(0.001 * 2**k for k in range(15))
_RESULTS = ("scheduled", "unschedulable", "error")


class _PendingCollector(Collector):
    def __init__(self) -> None:
        self.source: Callable[[], Mapping[str, int]] | None = None

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means "
            "number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the "
            "scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the "
            "scheduler never attempted to schedule because they are gated.",
            labels=("queue",),
        )
        counts = self.source() if self.source is not None else {}
        for queue in PENDING_QUEUES:
            family.add_metric((queue,), float(counts.get(queue, 0)))
        yield family


class SchedulerMetrics:
    """The scheduler's series in a `ComponentMetrics` registry; `attempt(result, seconds)` is a counter increment
    and a histogram observation."""

    def __init__(self, component: ComponentMetrics | None = None, profile: str = "default-scheduler") -> None:
        self.component = component or ComponentMetrics()
        r = self.component.registry
        attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
            "while 'error' means an internal scheduler problem.",
            ("result", "profile"),
            registry=r,
        )
        duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ("result", "profile"),
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.pod_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=(1, 2, 4, 8, 16),
            registry=r,
        )
        self._attempts = {res: attempts.labels(res, profile) for res in _RESULTS}
        self._durations = {res: duration.labels(res, profile) for res in _RESULTS}
        self._pending = _PendingCollector()
        r.register(self._pending)

    def attempt(self, result: str, seconds: float) -> None:
        """One scheduling attempt ended with `result` (scheduled, unschedulable or error) after `seconds`."""
        self._attempts[result].inc()
        self._durations[result].observe(seconds)

    def scheduled(self, seconds: float, attempts: int) -> None:
        self.attempt("scheduled", seconds)
        self.pod_attempts.observe(attempts)

    def watch_pending(self, source: Callable[[], Mapping[str, int]]) -> None:
        """Report scheduler_pending_pods{queue} from `source()` (queue → count) at each scrape."""
        self._pending.source = source

    def render(self) -> bytes:
        return self.component.render()
