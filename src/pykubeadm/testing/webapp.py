"""Serving an aiohttp application on a free loopback port for the length of a test."""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator

from aiohttp import web

__all__ = ["serve_app"]


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
