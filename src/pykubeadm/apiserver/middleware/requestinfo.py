"""Request-info middleware: parses the path into a RequestInfo (stored on the request for later filters)."""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from pykubeadm.apiserver.handlers.context import INFO_KEY
from pykubeadm.apiserver.requestinfo import parse_request_info

__all__ = ["request_info_middleware"]


def request_info_middleware() -> Middleware:
    @web.middleware
    async def request_info(request: web.Request, handler: Handler) -> web.StreamResponse:
        request[INFO_KEY] = parse_request_info(request.method, request.path, request.query)
        return await handler(request)

    return request_info
