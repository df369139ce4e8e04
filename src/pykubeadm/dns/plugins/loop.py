"""The loop plugin: at start-up the server sends itself `HINFO <random>.<random>.<zone>`; if that query comes back
to it more than twice (a forwarder pointing back at us), it is a forwarding loop and the process stops, as CoreDNS:
`[FATAL] plugin/loop: Loop (127.0.0.1:40001 -> :53) detected for zone ".", see …#troubleshooting. Query: "HINFO …"`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from typing import Any

import dns.asyncquery
import dns.exception
import dns.message
import dns.rdatatype

from pykubeadm.dns.corefile import Directive
from pykubeadm.dns.plugin import Handler, Plugin, PluginError, Request, SetupContext

__all__ = ["LoopPlugin", "setup"]

log = logging.getLogger("plugin/loop")
_PROBES = 3
_PROBE_TIMEOUT = 6.0  # longer than forward's whole budget, so an unreachable upstream is not a lost probe


class LoopPlugin(Plugin):
    name = "loop"

    def __init__(self, zone: str, ctx: SetupContext):
        self.zone = zone
        self.shared = ctx.shared
        self.probe = f"{random.getrandbits(63)}.{random.getrandbits(63)}.{'' if zone == '.' else zone}"
        self.seen = 0
        self._task: asyncio.Task[Any] | None = None

    async def serve(self, req: Request, next_: Handler) -> dns.message.Message:
        if req.qtype == dns.rdatatype.HINFO and req.name_text == self.probe:
            self.seen += 1
            if self.seen > 2:
                message = (
                    f"Loop ({req.client[0]}:{req.client[1]} -> {req.server.removeprefix('dns://')}) detected for "
                    f'zone "{self.zone}", see https://coredns.io/plugins/loop#troubleshooting. '
                    f'Query: "HINFO {self.probe}"'
                )
                fatal = self.shared.get("fatal")
                if fatal is not None:
                    fatal(f"plugin/loop: {message}")
        return await next_(req)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._send_probes())

    async def _send_probes(self) -> None:
        listening: asyncio.Event | None = self.shared.get("listening")
        if listening is not None:
            await listening.wait()
        address = self.shared.get("self_address")
        if address is None:
            return
        query = dns.message.make_query(self.probe, dns.rdatatype.HINFO)
        for _ in range(_PROBES):
            try:
                await dns.asyncquery.udp(query, address[0], timeout=_PROBE_TIMEOUT, port=address[1])
                return
            except (dns.exception.Timeout, OSError):
                self.seen = 0  # no answer (an unreachable upstream): only a probe seen again within one try counts

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def setup(d: Directive, ctx: SetupContext) -> LoopPlugin:
    if d.args or d.block:
        raise PluginError("loop", d.arg_error())
    return LoopPlugin(ctx.zones[0] if ctx.zones else ".", ctx)
