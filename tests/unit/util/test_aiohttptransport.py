"""util.aiohttptransport: httpx requests sent through aiohttp behave as through httpx's own transport (headers and body
as given, content-encoding decoded once by httpx, streamed bodies as they arrive, no redirect followed) and fail with
httpx's transport errors."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator

import httpx2
import pytest
from aiohttp import web

from pykubeadm.testing.etcd import free_port
from pykubeadm.testing.webapp import serve_app
from pykubeadm.util.aiohttptransport import AiohttpTransport

pytestmark = pytest.mark.asyncio


async def _echo(request: web.Request) -> web.Response:
    return web.json_response(
        {
            "method": request.method,
            "query": dict(request.query),
            "body": (await request.read()).decode(),
            "contentType": request.headers.get("Content-Type"),
            "userAgent": request.headers.get("User-Agent"),
            "custom": request.headers.get("X-Custom"),
        }
    )


async def _gzipped(_request: web.Request) -> web.Response:
    return web.Response(body=gzip.compress(b"hello " * 100), headers={"Content-Encoding": "gzip"})


async def _redirect(_request: web.Request) -> web.Response:
    raise web.HTTPFound("/elsewhere")


async def _lines(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse()
    await resp.prepare(request)
    for i in range(3):
        await resp.write(f'{{"n": {i}}}\n'.encode())
        await asyncio.sleep(0.05)
    return resp


async def _slow(_request: web.Request) -> web.Response:
    await asyncio.sleep(2)
    return web.Response(text="late")


@pytest.fixture
async def server() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_route("*", "/echo", _echo)
    app.router.add_get("/gzip", _gzipped)
    app.router.add_get("/redirect", _redirect)
    app.router.add_get("/lines", _lines)
    app.router.add_get("/slow", _slow)
    async with serve_app(app) as url:
        yield url


def _client(base: str, timeout: float = 5.0) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(base_url=base, transport=AiohttpTransport(None), timeout=timeout)


async def test_requests_arrive_as_httpx_built_them(server: str) -> None:
    async with _client(server) as client:
        r = await client.post("/echo", params={"watch": "true"}, json={"a": 1}, headers={"X-Custom": "yes"})
    assert r.status_code == 200 and r.http_version == "HTTP/1.1"
    got = r.json()
    assert got["method"] == "POST" and got["query"] == {"watch": "true"}
    assert got["body"] == '{"a":1}' and got["contentType"] == "application/json"
    assert got["userAgent"].startswith("python-httpx") and got["custom"] == "yes"  # httpx's headers, not aiohttp's


async def test_content_encoding_is_decoded_once_and_redirects_are_not_followed(server: str) -> None:
    async with _client(server) as client:
        assert (await client.get("/gzip")).text == "hello " * 100
        r = await client.get("/redirect")
    assert r.status_code == 302 and r.headers["Location"] == "/elsewhere"


async def test_a_streamed_body_arrives_as_it_is_written(server: str) -> None:
    async with _client(server) as client, client.stream("GET", "/lines") as r:
        lines = [line async for line in r.aiter_lines()]
    assert lines == ['{"n": 0}', '{"n": 1}', '{"n": 2}']


async def test_failures_are_httpx_transport_errors(server: str) -> None:
    closed = free_port()
    async with _client(f"http://127.0.0.1:{closed}") as client:
        with pytest.raises(httpx2.ConnectError):
            await client.get("/echo")
    async with _client(server, timeout=0.2) as client:
        with pytest.raises(httpx2.ReadTimeout):
            await client.get("/slow")
