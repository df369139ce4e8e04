"""The per-request admission record (admission/recorder): started for every request, and the warnings it gathered
sent as `Warning: 299 - "<text>"` headers on the response, whether it succeeded or was refused (kube-apiserver sends
admission warnings with errors too). Outermost in the chain, so it sees the response that recovery rendered."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from pykubeadm.apiserver.admission import recorder
from pykubeadm.apiserver.handlers.codec import add_warnings

__all__ = ["admission_record_middleware"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def admission_record_middleware() -> Middleware:
    @web.middleware
    async def admission_record(request: web.Request, handler: Handler) -> web.StreamResponse:
        record = recorder.begin()
        resp = await handler(request)
        if record.warnings and not resp.prepared:
            add_warnings(resp, record.warnings)
        return resp

    return admission_record
