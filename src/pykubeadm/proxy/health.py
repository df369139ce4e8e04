"""kube-proxy's HTTP servers: `/healthz` and `/livez` on the healthz address (10256), `/metrics` on 10249.

Used by `proxy.server`. `ProxyHealth` is kube-proxy's ProxyHealthServer state: a sync queued and not done within the
health timeout (2 × syncPeriod) makes the proxy unhealthy; the node is ineligible while it is being deleted or carries
the cluster autoscaler's ToBeDeletedByClusterAutoscaler taint. The JSON bodies and timestamps are kube-proxy's
(Go's `time.Time` text form).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from pykubeadm import constants as c
from pykubeadm.proxy import metrics

__all__ = ["TO_BE_DELETED_TAINT", "ProxyHealth", "go_time", "start_health_server", "start_metrics_server"]

TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
_MONO0 = time.monotonic()


def go_time(wall: float | None, mono: float | None = None) -> str:
    """Go's Time.String(): `2006-01-02 15:04:05.999999999 +0000 UTC m=+1.000000001`; None is the zero time."""
    if wall is None:
        return "0001-01-01 00:00:00 +0000 UTC"
    t = dt.datetime.fromtimestamp(wall, dt.UTC)
    frac = f"{t.microsecond:06d}000".rstrip("0")
    text = t.strftime("%Y-%m-%d %H:%M:%S") + (f".{frac}" if frac else "") + " +0000 UTC"
    if mono is not None:
        text += f" m=+{mono - _MONO0:.9f}"
    return text


class ProxyHealth:
    """Sync bookkeeping behind /healthz and /livez (kube-proxy's ProxyHealthServer)."""

    def __init__(self, health_timeout: float, clock: Callable[[], float] = time.time):
        self.health_timeout = health_timeout
        self.clock = clock
        self.last_updated: float | None = None
        self.oldest_pending: float | None = None
        self.node_eligible = True

    def queued_update(self) -> None:
        if self.oldest_pending is None:
            self.oldest_pending = self.clock()

    def updated(self) -> None:
        self.oldest_pending = None
        self.last_updated = self.clock()

    def sync_node(self, node: Mapping[str, Any] | None) -> None:
        if node is None:
            return
        meta, spec = node.get("metadata") or {}, node.get("spec") or {}
        deleted = bool(meta.get("deletionTimestamp"))
        tainted = any(t.get("key") == TO_BE_DELETED_TAINT for t in spec.get("taints") or [])
        self.node_eligible = not (deleted or tainted)

    def healthy(self) -> bool:
        if self.oldest_pending is None:
            return True
        return self.clock() - self.oldest_pending < self.health_timeout

    def body(self, *, with_node: bool) -> tuple[int, str]:
        healthy = self.healthy() and (self.node_eligible or not with_node)
        now = self.clock()
        mono = time.monotonic()
        last = go_time(now, mono) if healthy else go_time(self.last_updated)
        text = f'{{"lastUpdated": "{last}","currentTime": "{go_time(now, mono)}"'
        text += f', "nodeEligible": {str(self.node_eligible).lower()}}}' if with_node else "}"
        return (200 if healthy else 503), text


async def _serve(app: web.Application, host_port: str) -> web.AppRunner:
    host, _, port = host_port.rpartition(":")
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=c.SERVER_SHUTDOWN_TIMEOUT_SECONDS)
    await runner.setup()
    site = web.TCPSite(runner, host.strip("[]"), int(port), reuse_address=True)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


async def start_health_server(health: ProxyHealth, host_port: str) -> web.AppRunner:
    """Serve /healthz and /livez; OSError when the address cannot be bound."""

    def handler(with_node: bool) -> Callable[[web.Request], Any]:
        async def handle(_: web.Request) -> web.Response:
            code, text = health.body(with_node=with_node)
            (metrics.HEALTHZ_TOTAL if with_node else metrics.LIVEZ_TOTAL).labels(str(code)).inc()
            return web.Response(
                status=code, text=text, content_type="application/json", headers={"X-Content-Type-Options": "nosniff"}
            )

        return handle

    app = web.Application()
    app.router.add_get("/healthz", handler(True))
    app.router.add_get("/livez", handler(False))
    return await _serve(app, host_port)


async def start_metrics_server(host_port: str, proxy_mode: str, configz: Mapping[str, Any]) -> web.AppRunner:
    """Serve /metrics (Prometheus text), /proxyMode, /configz and /healthz as kube-proxy's metrics server does."""

    async def metrics_handler(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(metrics.REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def mode_handler(_: web.Request) -> web.Response:
        return web.Response(text=proxy_mode)

    async def configz_handler(_: web.Request) -> web.Response:
        return web.json_response({"kubeproxy.config.k8s.io": dict(configz)})

    async def ok(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/metrics", metrics_handler)
    app.router.add_get("/proxyMode", mode_handler)
    app.router.add_get("/configz", configz_handler)
    app.router.add_get("/healthz", ok)
    return await _serve(app, host_port)
