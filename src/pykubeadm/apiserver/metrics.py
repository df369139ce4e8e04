"""The apiserver's Prometheus metrics with kube-apiserver's names and labels (prometheus_client): requests by verb,
group, version, resource, scope, subresource and code, their latency, requests in flight, long-running requests
(watches, streams), registered watchers and storage latency. app.py adds the request middleware; dispatch serves
GET /metrics (authorized as the nonResourceURL /metrics, which the system:monitoring ClusterRole grants).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from pykubeadm.apiserver.handlers.context import INFO_KEY
from pykubeadm.apiserver.requestinfo import RequestInfo

__all__ = ["METRICS", "ApiMetrics", "TimedBackend", "instrument_storage", "metrics_middleware", "serve_metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: kube-apiserver's apiserver_request_duration_seconds buckets.
_REQUEST_BUCKETS = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60,
)  # fmt: skip
_STORAGE_BUCKETS = (
    0.005,
    0.025,
    0.05,
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1.0,
    1.25,
    1.5,
    2,
    3,
    4,
    5,
    6,
    8,
    10,
    15,
    20,
    30,
    45,
    60,
)
_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")
_LONG_RUNNING = frozenset({"watch", "log", "exec", "attach", "portforward", "proxy"})
_READ_ONLY = frozenset({"get", "list", "watch"})


class ApiMetrics:
    """One registry per apiserver application."""

    def __init__(self, state: Any = None) -> None:
        self.registry = CollectorRegistry()
        self.state = state
        r = self.registry
        self.requests = Counter(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, "
            "component, and HTTP response code.",
            (*_LABELS, "code"),
            registry=r,
        )
        self.duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, resource, "
            "subresource, scope and component.",
            _LABELS,
            buckets=_REQUEST_BUCKETS,
            registry=r,
        )
        self.inflight = Gauge(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per request kind in last "
            "second.",
            ("request_kind",),
            registry=r,
        )
        self.longrunning = Gauge(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope "
            "and component. Not all requests are tracked this way.",
            ("verb", "group", "version", "resource", "subresource", "scope", "component"),
            registry=r,
        )
        self.storage = Histogram(
            "etcd_request_duration_seconds",
            "Etcd request latency in seconds for each operation and object type.",
            ("operation", "type"),
            buckets=_STORAGE_BUCKETS,
            registry=r,
        )
        self.inflight.labels("readOnly").set(0)
        self.inflight.labels("mutating").set(0)
        r.register(_WatcherCollector(self))
        #: labelled children by label values (prometheus_client's labels() validates and locks on every call)
        self._children: dict[tuple[str, ...], _Series] = {}

    def series(self, labels: tuple[str, ...], long_running: bool, kind: str) -> _Series:
        """The labelled children one request updates, made once per distinct label values (the verb label decides
        `long_running` and `kind`, so they need not be part of the key)."""
        s = self._children.get(labels)
        if s is None:
            gauge = self.longrunning.labels(*labels[:1], *labels[2:]) if long_running else self.inflight.labels(kind)
            s = self._children[labels] = _Series(gauge, None if long_running else self.duration.labels(*labels))
        return s

    def count(self, series: _Series, labels: tuple[str, ...], code: int) -> None:
        counter = series.by_code.get(code)
        if counter is None:
            counter = series.by_code[code] = self.requests.labels(*labels, str(code))
        counter.inc()

    def labels(self, info: RequestInfo, dry_run: bool, verb: str) -> tuple[str, ...]:
        scope = "resource" if info.name else "namespace" if info.namespace else "cluster"
        return (verb, "All" if dry_run else "", info.api_group, info.api_version, info.resource, info.subresource,
                scope, "apiserver")  # fmt: skip

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Series:
    """One label set's children: its in-flight (or long-running) gauge, its duration histogram, counters by code."""

    __slots__ = ("by_code", "duration", "gauge")

    def __init__(self, gauge: Any, duration: Any) -> None:
        self.gauge = gauge
        self.duration = duration
        self.by_code: dict[int, Any] = {}


class _WatcherCollector:
    """apiserver_registered_watchers{group,version,kind}: the watch caches' watcher counts at scrape time."""

    def __init__(self, metrics: ApiMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[GaugeMetricFamily]:
        g = GaugeMetricFamily(
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resources",
            labels=("group", "version", "kind"),
        )
        state = self.metrics.state
        for store in getattr(state, "stores", {}).values():
            cache = getattr(store, "_watch_cache", None)
            count = cache.watcher_count() if cache is not None else 0
            if count:
                s = store.strategy
                g.add_metric((s.group, s.version, s.kind), count)
        yield g


METRICS = web.AppKey("metrics", ApiMetrics)


def _verb(request: web.Request, info: RequestInfo) -> str:
    if not info.is_resource:
        return request.method.upper()
    if info.verb == "patch" and request.headers.get("Content-Type", "").startswith("application/apply-patch"):
        return "APPLY"
    if info.verb == "create":
        return "POST"
    if info.verb == "update":
        return "PUT"
    return info.verb.upper()


def metrics_middleware() -> Callable[..., Awaitable[web.StreamResponse]]:
    """Counts and times every request (after request info, before authentication: 401s and 403s count too)."""

    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[..., Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        metrics = request.app.get(METRICS)
        info: RequestInfo | None = request.get(INFO_KEY)
        if metrics is None or info is None:
            return await handler(request)
        long_running = info.verb in _LONG_RUNNING or info.subresource in _LONG_RUNNING
        verb = _verb(request, info)
        labels = metrics.labels(info, "dryRun" in request.query, verb)
        series = metrics.series(labels, long_running, "readOnly" if info.verb in _READ_ONLY else "mutating")
        gauge = series.gauge
        gauge.inc()
        start = time.perf_counter()
        code = 500
        try:
            response = await handler(request)
            code = response.status
            return response
        except web.HTTPException as e:
            code = e.status
            raise
        except Exception as e:
            code = int(getattr(e, "code", 500) or 500)
            raise
        finally:
            gauge.dec()
            metrics.count(series, labels, code)
            if series.duration is not None:
                series.duration.observe(time.perf_counter() - start)

    return middleware


def serve_metrics(request: web.Request) -> web.Response:
    metrics = request.app.get(METRICS)
    body = metrics.render() if metrics is not None else b""
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


class TimedBackend:
    """A storage backend wrapper recording etcd_request_duration_seconds{operation,type} for one resource."""

    def __init__(self, backend: Any, resource: str, metrics: ApiMetrics) -> None:
        self._backend = backend
        for name in ("get", "list", "create", "update", "delete"):
            method = getattr(backend, name, None)
            if callable(method):
                setattr(self, name, self._timed(method, metrics.storage, (name, resource)))

    @staticmethod
    def _timed(
        method: Callable[..., Awaitable[Any]], family: Any, labels: tuple[str, str]
    ) -> Callable[..., Awaitable[Any]]:
        child: list[Any] = []  # the labelled histogram, made on first use (no series for unused operations)

        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                if not child:
                    child.append(family.labels(*labels))
                child[0].observe(time.perf_counter() - start)

        return timed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


def instrument_storage(state: Any, metrics: ApiMetrics) -> None:
    """Time every registry store's storage calls (watches excluded)."""
    for store in state.stores.values():
        if not isinstance(store.backend, TimedBackend):
            store.backend = TimedBackend(store.backend, store.strategy.resource_name, metrics)
