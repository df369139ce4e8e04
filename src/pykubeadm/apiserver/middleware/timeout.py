"""--request-timeout (kube's WithTimeoutForNonLongRunningRequests): a request that is not long-running (watches,
proxy, exec/attach/log/portforward are) and takes longer than the timeout is answered 504 Timeout. A client's own
shorter `?timeout=` applies too, as kube's does."""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.context import INFO_KEY
from pykubeadm.apiserver.middleware.maxinflight import is_long_running
from pykubeadm.util.goduration import parse_duration

__all__ = ["request_timeout_middleware"]


def _client_timeout(request: web.Request) -> float | None:
    raw = request.query.get("timeout")
    if not raw:
        return None
    try:
        seconds = parse_duration(raw).total_seconds()
    except ValueError:
        raise st.bad_request(f'invalid timeout specified in the request URL: time: invalid duration "{raw}"') from None
    return seconds if seconds > 0 else None


def request_timeout_middleware(seconds: float) -> Middleware:
    @web.middleware
    async def request_timeout(request: web.Request, handler: Handler) -> web.StreamResponse:
        info = request.get(INFO_KEY)
        if info is None or is_long_running(info):
            return await handler(request)
        limit = seconds
        client = _client_timeout(request)
        if client is not None and client < limit:
            limit = client
        try:
            async with asyncio.timeout(limit):
                return await handler(request)
        except TimeoutError:
            raise st.ApiError(
                504, "Timeout", "Timeout: request did not complete within the allotted timeout", {}
            ) from None

    return request_timeout
