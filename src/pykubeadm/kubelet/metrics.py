"""The kubelet's /metrics with kube's names: kubelet_node_name{node}, kubelet_running_pods,
kubelet_running_containers{container_state}, kubelet_started_pods_total, kubelet_started_containers_total
{container_type}, kubelet_pod_start_duration_seconds and rest_client_requests_total{code,method,host} (the kubelet's
API client calls `count_response`), plus the process collector, in the kubelet's own registry.

The running gauges are read from the Pod workers when scraped. The counters and the start duration come from
`pod_changed(worker)`, which every PodWorker calls on each change of its state (podworker.PodWorker.changed): a
sandbox seen ready for the first time is a started Pod, a container id seen running for the first time a started
container, and the first time a Pod's phase is Running its time since the kubelet first saw it is observed (kube's
"from kubelet seeing a pod for the first time to the pod starting to run"). Each call looks at that worker only (now and then it also forgets workers that are gone).
Served by kubelet/server.py at GET /metrics (nodes/metrics); /metrics/resource is kubelet/resourcemetrics.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
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
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["CONTENT_TYPE", "KubeletMetrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

disable_created_metrics()  # the kubelet exposes no `_created` series
#: kubelet_pod_start_duration_seconds' buckets (kube's).
_START_BUCKETS = (
    0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600,
)  # fmt: skip


@dataclass
class _Seen:
    """What the metrics have already counted of one Pod worker."""

    first_seen: float
    started: bool = False
    running: bool = False
    container_ids: set[str] = field(default_factory=set)


def _container_state(ct: Any) -> str | None:
    """kubelet_running_containers' container_state of a container, None when the runtime has no container for it."""
    if ct.pid is not None and "running" in ct.state:
        return "running"
    if "terminated" in ct.state:
        return "exited"
    if ct.container_id:
        return "created" if "waiting" in ct.state else "unknown"
    return None


class _RunningCollector(Collector):
    def __init__(self, metrics: KubeletMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        workers = self._metrics.workers()
        pods = GaugeMetricFamily("kubelet_running_pods", "Number of pods that have a running pod sandbox")
        containers = GaugeMetricFamily(
            "kubelet_running_containers", "Number of containers currently running", labels=("container_state",)
        )
        states: dict[str, int] = {}
        sandboxes = 0
        for w in workers:
            if not w.finished() and (w.sandbox_ready or w.source == "file"):
                sandboxes += 1
            for ct in w.all_containers():
                state = _container_state(ct)
                if state is not None:
                    states[state] = states.get(state, 0) + 1
        pods.add_metric((), float(sandboxes))
        for state in ("created", "exited", "running", "unknown"):
            containers.add_metric((state,), float(states.get(state, 0)))
        self._metrics.forget_except({(w.uid, id(w)) for w in workers})
        yield pods
        yield containers


class KubeletMetrics:
    """The kubelet's registry. `workers()` lists the node's PodWorkers (static and API)."""

    def __init__(self, node_name: str, workers: Callable[[], list[Any]]) -> None:
        self.workers = workers
        self.registry = CollectorRegistry()
        r = self.registry
        ProcessCollector(registry=r)
        Gauge("kubelet_node_name", "The node's name. The count is always 1.", ("node",), registry=r).labels(
            node_name
        ).set(1)
        self.started_pods = Counter("kubelet_started_pods", "Cumulative number of pods started", registry=r)
        self.started_containers = Counter(
            "kubelet_started_containers", "Cumulative number of containers started", ("container_type",), registry=r
        )
        self.pod_start_duration = Histogram(
            "kubelet_pod_start_duration_seconds",
            "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
            buckets=_START_BUCKETS,
            registry=r,
        )
        self.rest_client_requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ("code", "method", "host"),
            registry=r,
        )
        r.register(_RunningCollector(self))
        self._seen: dict[tuple[str, int], _Seen] = {}
        self._prune_at = 64
        self._container_types = {False: self.started_containers.labels("container"),
                                 True: self.started_containers.labels("init_container")}  # fmt: skip

    def pod_changed(self, worker: Any) -> None:
        """A PodWorker's state changed: count what started since its last change."""
        key = (worker.uid, id(worker))
        seen = self._seen.get(key)
        if seen is None:
            if len(self._seen) >= self._prune_at:  # gone workers are forgotten at scrapes; without scrapes, here
                self.forget_except({(w.uid, id(w)) for w in self.workers()})
                self._prune_at = 2 * len(self._seen) + 64
            seen = self._seen[key] = _Seen(time.monotonic())
        if not seen.started and worker.sandbox_ready:
            seen.started = True
            self.started_pods.inc()
        for ct in worker.all_containers():
            cid = ct.container_id
            if cid and cid not in seen.container_ids and "running" in ct.state:
                seen.container_ids.add(cid)
                self._container_types[bool(ct.init)].inc()
        if not seen.running and worker.phase() == "Running":
            seen.running = True
            self.pod_start_duration.observe(time.monotonic() - seen.first_seen)

    def forget_except(self, live: set[tuple[str, int]]) -> None:
        """Drop what was remembered of workers that are gone."""
        for key in [k for k in self._seen if k not in live]:
            del self._seen[key]

    async def count_response(self, method: str, host: str, status: int) -> None:
        """The API client's response hook (kubelet.api.KubeClient): rest_client_requests_total{code, method, host}."""
        self.rest_client_requests.labels(str(status), method, host).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
