"""The reload plugin: re-read the Corefile every INTERVAL (default 30 s, plus up to JITTER, default 15 s; at least
2 s) and, when its SHA512 changed, ask the server to load it (a ConfigMap volume update arrives as a symlink swap,
so the file is read afresh by path each time). A Corefile that fails to load leaves the running one in place.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import random
from typing import Any

from pykubeadm.dns.corefile import Directive
from pykubeadm.dns.plugin import Plugin, PluginError, SetupContext
from pykubeadm.util.goduration import parse_duration

__all__ = ["ReloadPlugin", "corefile_sha512", "setup"]

log = logging.getLogger("plugin/reload")
MIN_INTERVAL = 2.0


def corefile_sha512(text: str) -> str:
    return hashlib.sha512(text.encode()).hexdigest()


class ReloadPlugin(Plugin):
    name = "reload"

    def __init__(self, interval: float, jitter: float, ctx: SetupContext):
        self.interval = interval
        self.jitter = jitter
        self.path = ctx.corefile_path
        self.shared = ctx.shared
        self._task: asyncio.Task[Any] | None = None

    async def start(self) -> None:
        if self.path and self.shared.get("reload_plugin") is self and self._task is None:
            self._task = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval + random.uniform(0, self.jitter))
            try:
                with open(self.path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as err:
                log.error("failed to read %s: %s", self.path, err)
                continue
            sha = corefile_sha512(text)
            if sha != self.shared.get("corefile_sha512") and sha != self.shared.get("failed_sha512"):
                self.shared["request_reload"](text)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


def _seconds(d: Directive, text: str, what: str) -> float:
    try:
        return parse_duration(text).total_seconds()
    except ValueError:
        raise PluginError("reload", d.error(f"invalid {what}: {text}")) from None


def setup(d: Directive, ctx: SetupContext) -> ReloadPlugin:
    if len(d.args) > 2 or d.block:
        raise PluginError("reload", d.arg_error())
    interval = _seconds(d, d.args[0], "interval") if d.args else 30.0
    jitter = _seconds(d, d.args[1], "jitter") if len(d.args) > 1 else 15.0
    if interval < MIN_INTERVAL:
        raise PluginError("reload", d.error(f"interval value must be greater or equal to {MIN_INTERVAL:g}s"))
    if jitter < 1 and len(d.args) > 1:
        raise PluginError("reload", d.error("jitter value must be greater or equal to 1s"))
    jitter = min(jitter, interval / 2)
    plugin = ReloadPlugin(interval, jitter, ctx)
    ctx.shared.setdefault("reload_plugin", plugin)  # one watcher per process, whichever block declares it first
    return plugin
