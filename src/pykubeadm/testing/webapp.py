"""Serving an aiohttp application on a free loopback port for the length of a test."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections.abc import AsyncIterator, Callable, Iterator

from aiohttp import web

__all__ = ["serve_app", "serve_app_in_thread"]


@contextlib.asynccontextmanager
async def serve_app(
    app: web.Application, host: str = "127.0.0.1", ssl_context: ssl.SSLContext | None = None
) -> AsyncIterator[str]:
    """Serve `app` on a free port of `host` (with TLS when given a context); yields its base URL, stops it on exit."""
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, 0, ssl_context=ssl_context)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        yield f"{'https' if ssl_context is not None else 'http'}://{host}:{port}"
    finally:
        await runner.cleanup()


@contextlib.contextmanager
def serve_app_in_thread(
    make_app: Callable[[], web.Application], host: str = "127.0.0.1", ssl_context: ssl.SSLContext | None = None
) -> Iterator[str]:
    """`serve_app` on an event loop of its own thread, for tests whose clients block (kubectl, the official Python
    client); the app is made on that loop. Yields the base URL; the server, loop and thread end on exit."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="serve_app_in_thread", daemon=True)
    thread.start()

    async def make() -> contextlib.AbstractAsyncContextManager[str]:
        return serve_app(make_app(), host, ssl_context)

    try:
        serving = asyncio.run_coroutine_threadsafe(make(), loop).result(10)
        url = asyncio.run_coroutine_threadsafe(serving.__aenter__(), loop).result(10)
        try:
            yield url
        finally:
            asyncio.run_coroutine_threadsafe(serving.__aexit__(None, None, None), loop).result(10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
