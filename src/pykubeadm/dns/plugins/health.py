"""The health plugin: `GET /health` → 200 `OK` on ADDRESS (default `:8080`) while the process runs.

`lameduck DURATION` keeps the server answering (and /health saying OK) for DURATION after SIGTERM before it exits;
the ready plugin reports not ready during that time. An empty host binds the Pod's IP (`plugin.listen_host`).
"""

from __future__ import annotations

import time

from aiohttp import web

from pykubeadm.dns import httpserve, metrics
from pykubeadm.dns.corefile import Directive
from pykubeadm.dns.plugin import Plugin, PluginError, SetupContext, listen_host, split_host_port
from pykubeadm.util.goduration import parse_duration

__all__ = ["HealthPlugin", "setup"]

DEFAULT_ADDRESS = ":8080"


class HealthPlugin(Plugin):
    name = "health"

    def __init__(self, lameduck: float):
        self.lameduck = lameduck

    async def handle(self, _request: web.Request) -> web.Response:
        start = time.perf_counter()
        response = web.Response(text="OK")
        metrics.HEALTH_DURATION.observe(time.perf_counter() - start)
        return response


def setup(d: Directive, ctx: SetupContext) -> HealthPlugin:
    if len(d.args) > 1:
        raise PluginError("health", d.arg_error())
    lameduck = 0.0
    for p in d.block:
        if p.name != "lameduck":
            raise PluginError("health", p.unknown_property())
        if len(p.args) != 1:
            raise PluginError("health", p.arg_error())
        try:
            lameduck = parse_duration(p.args[0]).total_seconds()
        except ValueError as err:
            raise PluginError(
                "health", p.error(f"unable to parse lameduck duration value: '{p.args[0]}': {err}")
            ) from None
    try:
        host, port = split_host_port(d.args[0] if d.args else DEFAULT_ADDRESS, 8080)
    except ValueError:
        raise PluginError("health", d.error(f"invalid address {d.args[0]!r}")) from None
    plugin = HealthPlugin(lameduck)
    ctx.shared["lameduck"] = max(ctx.shared.get("lameduck", 0.0), lameduck)
    httpserve.route(ctx.shared, listen_host(host, ctx), port, "/health", plugin.handle)
    return plugin
