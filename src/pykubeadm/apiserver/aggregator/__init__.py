"""The aggregation layer (apiregistration.k8s.io/v1, kube-aggregator's part of kube-apiserver): the APIService kind,
Local APIServices for the built-in group versions, availability of the others, the proxy to extension API servers and
their entries in discovery. dispatch.py calls `maybe_proxy` first and `discovery` helpers for /apis; server.py starts
`Aggregator.run`.
"""

from __future__ import annotations

from aiohttp import web

# registry/__init__ lists APIServiceStrategy among STRATEGIES: load it before this package's modules (which need
# registry.base), whichever of the two is imported first.
import pykubeadm.apiserver.registry  # noqa: F401
from pykubeadm.apiserver.aggregator.apiservice import APIServiceStrategy
from pykubeadm.apiserver.aggregator.controller import Aggregator, RemoteGroupVersion
from pykubeadm.apiserver.aggregator.proxy import ProxyTransport, proxy_request, text_error
from pykubeadm.apiserver.requestinfo import RequestInfo

__all__ = ["APIServiceStrategy", "Aggregator", "ProxyTransport", "maybe_proxy"]


async def maybe_proxy(request: web.Request, agg: Aggregator, info: RequestInfo) -> web.StreamResponse | None:
    """The answer for a non-local APIService's group version (proxied, or 503 while unavailable); None otherwise."""
    if info.is_resource:
        rgv = agg.route(info.api_group, info.api_version)
    else:
        parts = request.path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "apis":
            from pykubeadm.apiserver.aggregator.discovery import api_group

            doc = api_group(agg, parts[1])
            if doc is None:
                return None
            from pykubeadm.apiserver.handlers.codec import json_response

            return json_response(doc)
        if len(parts) < 3 or parts[0] != "apis":
            return None
        rgv = agg.route(parts[1], parts[2])
    if rgv is None:
        return None
    return await _serve(request, agg, rgv)


async def _serve(request: web.Request, agg: Aggregator, rgv: RemoteGroupVersion) -> web.StreamResponse:
    from pykubeadm.apiserver.handlers.context import USER_KEY

    user = request.get(USER_KEY)
    if user is None:
        return text_error("missing user", 500)
    if not rgv.available:
        return text_error("service unavailable", 503)
    try:
        backend = await agg.resolve(rgv)
    except LookupError as e:
        agg.recheck()
        return text_error(e.args[1], 503)
    resp = await proxy_request(request, agg.transport, backend, user)
    if resp.status == 503 and resp.headers.get("X-Content-Type-Options") == "nosniff":
        agg.recheck()
    return resp
