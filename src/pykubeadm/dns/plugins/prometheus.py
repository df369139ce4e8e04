"""The prometheus plugin: `/metrics` on ADDRESS (default `localhost:9153`; kubeadm writes `:9153`) and the per-query
metrics of its server block (coredns_dns_requests_total, _responses_total, _request_duration_seconds, sizes).
"""

from __future__ import annotations

import time
from typing import Any

import dns.message
import dns.rcode
import dns.rdatatype
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from pykubeadm.dns import httpserve, metrics
from pykubeadm.dns.corefile import Directive
from pykubeadm.dns.plugin import Handler, Plugin, PluginError, Request, SetupContext, listen_host, split_host_port

__all__ = ["PrometheusPlugin", "setup"]

DEFAULT_ADDRESS = "localhost:9153"
_COMMON_TYPES = {
    dns.rdatatype.RdataType.to_text(t) for t in (1, 2, 5, 6, 12, 15, 16, 28, 33, 35, 43, 46, 48, 255, 65, 64, 13)
}


def _type_label(qtype: int) -> str:
    text = dns.rdatatype.RdataType.to_text(qtype)
    return text if text in _COMMON_TYPES else "other"


class PrometheusPlugin(Plugin):
    name = "prometheus"

    def __init__(self) -> None:
        # the labelled children per label set (prometheus_client's .labels() lookup costs more than the increment)
        self._per_request: dict[tuple[str, str, str, str, int], tuple[Any, Any, Any, Any]] = {}
        self._per_response: dict[tuple[str, str, int, str], Any] = {}

    def _request_children(self, req: Request, family: str) -> tuple[Any, Any, Any, Any]:
        key = (req.server, req.zone, req.proto, family, req.qtype)
        children = self._per_request.get(key)
        if children is None:
            server, zone, proto, qtype = req.server, req.zone, req.proto, _type_label(req.qtype)
            children = self._per_request[key] = (
                metrics.REQUESTS.labels(server, zone, "", proto, family, qtype),
                metrics.REQUEST_DURATION.labels(server, zone, "", qtype),
                metrics.REQUEST_SIZE.labels(server, zone, "", proto),
                metrics.RESPONSE_SIZE.labels(server, zone, "", proto),
            )
        return children

    async def serve(self, req: Request, next_: Handler) -> dns.message.Message:
        start = time.perf_counter()
        reply = await next_(req)
        requests, duration, request_size, response_size = self._request_children(
            req, "2" if ":" in req.client[0] else "1"
        )
        requests.inc()
        duration.observe(time.perf_counter() - start)
        request_size.observe(req.extra.get("size", 0))
        writer = req.extra.get("writer", "")
        key = (req.server, req.zone, reply.rcode(), writer)
        responses = self._per_response.get(key)
        if responses is None:
            rcode = dns.rcode.to_text(key[2])
            responses = self._per_response[key] = metrics.RESPONSES.labels(req.server, req.zone, "", rcode, writer)
        responses.inc()
        req.extra["on_written"] = response_size.observe
        return reply


async def _metrics(_request: web.Request) -> web.Response:
    body = generate_latest(metrics.REGISTRY)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def setup(d: Directive, ctx: SetupContext) -> PrometheusPlugin:
    if len(d.args) > 1:
        raise PluginError("prometheus", d.arg_error())
    if d.block:
        raise PluginError("prometheus", d.block[0].unknown_property())
    try:
        host, port = split_host_port(d.args[0] if d.args else DEFAULT_ADDRESS, 9153)
    except ValueError:
        raise PluginError("prometheus", d.error(f"invalid address {d.args[0]!r}")) from None
    httpserve.route(ctx.shared, listen_host(host, ctx), port, "/metrics", _metrics)
    return PrometheusPlugin()
