"""An httpx2 transport over aiohttp, for the lightkube async clients of the components (controller-manager,
scheduler, kube-proxy, CoreDNS) and of `init`/`join`.

httpx's own transport runs every request through httpcore's connection pool and anyio's streams: its first request
imports anyio's asyncio backend (~50 ms of CPU, in every process, on the critical path of a cluster's start), and
each request costs noticeably more CPU than the same request through aiohttp, which every component imports anyway to
serve. lightkube, httpx's request building, authentication (bearer tokens, the controller-manager's service-account
tokens) and response decoding stay as they are: only the bytes move through aiohttp. As httpx's transport does, it
follows no redirect, leaves the content-encoding to httpx, and raises httpx's transport errors (ConnectError,
ReadTimeout, ...), so callers see no difference.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator

import aiohttp
import httpx2

__all__ = ["AiohttpTransport"]


def _mapped(exc: BaseException, request: httpx2.Request, connecting: bool) -> httpx2.TransportError:
    """httpx's exception for an aiohttp (or socket) failure."""
    message = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx2.ConnectTimeout(message, request=request)
    if isinstance(exc, TimeoutError):  # aiohttp's other timeouts are ones too: waiting for the answer
        return httpx2.ReadTimeout(message, request=request)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return httpx2.ConnectError(message, request=request)
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return httpx2.RemoteProtocolError(message, request=request)
    if isinstance(exc, OSError):  # aiohttp's ClientOSError too
        return (httpx2.ConnectError if connecting else httpx2.ReadError)(message, request=request)
    return httpx2.TransportError(message, request=request)


class _Body(httpx2.AsyncByteStream):
    """A response body read from aiohttp as it arrives; closing it gives the connection back (or drops it)."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx2.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise _mapped(exc, self._request, connecting=False) from exc

    async def aclose(self) -> None:
        self._response.release()


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """Sends httpx requests with one aiohttp session (a pool of up to `limit` connections), TLS per `ssl_context`."""

    def __init__(self, ssl_context: ssl.SSLContext | None, limit: int = 100) -> None:
        self._ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self._limit = limit
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._ssl, limit=self._limit),
                auto_decompress=False,  # httpx decodes the content-encoding it asked for
                cookie_jar=aiohttp.DummyCookieJar(),
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            )
        return self._session

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        timeouts = request.extensions.get("timeout") or {}
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=timeouts.get("connect"), sock_read=timeouts.get("read")
        )
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        body = await request.aread()
        try:
            response = await self._client().request(
                request.method,
                str(request.url),
                headers=headers,
                data=body or None,
                timeout=timeout,
                allow_redirects=False,
            )
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise _mapped(exc, request, connecting=True) from exc
        return httpx2.Response(
            response.status,
            headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.raw_headers],
            stream=_Body(response, request),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (response.reason or "").encode("latin-1")},
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
