"""The ready plugin: `GET /ready` → 200 `OK` once every plugin that reports readiness (the kubernetes plugin after
its first sync) is ready, else 503 with the names of those that are not; 503 during lameduck too. Default `:8181`.
"""

from __future__ import annotations

from aiohttp import web

from pykubeadm.dns import httpserve
from pykubeadm.dns.corefile import Directive
from pykubeadm.dns.plugin import Plugin, PluginError, SetupContext, listen_host, split_host_port

__all__ = ["ReadyPlugin", "setup"]

DEFAULT_ADDRESS = ":8181"


class ReadyPlugin(Plugin):
    name = "ready"

    def __init__(self, ctx: SetupContext):
        self.shared = ctx.shared

    async def handle(self, _request: web.Request) -> web.Response:
        if self.shared.get("shutting_down"):
            return web.Response(status=503, text="shutting down")
        plugins: list[Plugin] = self.shared.get("plugins", [])
        waiting = sorted({p.name for p in plugins if not p.ready()})
        if waiting:
            return web.Response(status=503, text=",".join(waiting))
        return web.Response(text="OK")


def setup(d: Directive, ctx: SetupContext) -> ReadyPlugin:
    if len(d.args) > 1:
        raise PluginError("ready", d.arg_error())
    if d.block:
        raise PluginError("ready", d.block[0].unknown_property())
    try:
        host, port = split_host_port(d.args[0] if d.args else DEFAULT_ADDRESS, 8181)
    except ValueError:
        raise PluginError("ready", d.error(f"invalid address {d.args[0]!r}")) from None
    plugin = ReadyPlugin(ctx)
    httpserve.route(ctx.shared, listen_host(host, ctx), port, "/ready", plugin.handle)
    return plugin
