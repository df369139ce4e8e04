"""The HTTP listeners of the health, ready and prometheus plugins: one aiohttp site per address, shared by paths.

Plugins call `route(shared, host, port, path, handler)` during setup; the server calls `start_all`/`stop_all` with
the rest of one configuration's lifetime (a reload stops them and starts the new configuration's). Sites set
SO_REUSEPORT as CoreDNS's listeners do, so replicas sharing a Pod address (one lab node) can all bind :8080.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from pykubeadm import constants as c

__all__ = ["HttpListeners", "route"]

Route = Callable[[web.Request], Awaitable[web.StreamResponse]]


class HttpListeners:
    """address → {path: handler}, then the running aiohttp runners."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, int], dict[str, Route]] = {}
        self._runners: list[web.AppRunner] = []

    def add(self, host: str, port: int, path: str, handler: Route) -> None:
        self.routes.setdefault((host, port), {}).setdefault(path, handler)

    async def start_all(self) -> None:
        for (host, port), paths in self.routes.items():
            app = web.Application()
            for path, handler in paths.items():
                app.router.add_get(path, handler)
            runner = web.AppRunner(
                app, access_log=None, handle_signals=False, shutdown_timeout=c.SERVER_SHUTDOWN_TIMEOUT_SECONDS
            )
            await runner.setup()
            try:
                await web.TCPSite(runner, host, port, reuse_address=True, reuse_port=True).start()
            except OSError:
                await runner.cleanup()
                raise
            self._runners.append(runner)

    async def stop_all(self) -> None:
        for runner in self._runners:
            with contextlib.suppress(Exception):
                await runner.cleanup()
        self._runners.clear()


def route(shared: dict[str, Any], host: str, port: int, path: str, handler: Route) -> None:
    """Serve `path` on host:port (one listener per address, created by the server). When several server blocks
    declare the same plugin on the same address, the first one serves it (CoreDNS shares the listener too)."""
    listeners = shared.setdefault("http", HttpListeners())
    listeners.add(host, port, path, handler)
