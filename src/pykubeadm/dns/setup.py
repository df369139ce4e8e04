"""Corefile text → a running configuration's parts: each server block's keys, listen addresses and plugin chain.

Called by `dns.server` at start-up and on every reload. Plugins are set up from the block's directives and then
chained in CoreDNS's fixed order (`ORDER`, from its plugin.cfg), not the Corefile's. An unknown directive is
`Corefile:12 - Error during parsing: Unknown directive 'xyz'`; a plugin's own error is `plugin/NAME: …`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dns.inet
import dns.message

from pykubeadm.dns.corefile import CorefileError, ServerKey, parse_corefile, parse_server_key
from pykubeadm.dns.plugin import Handler, Plugin, PluginError, Request, SetupContext, listen_host

__all__ = ["ORDER", "PLUGINS", "Block", "Config", "load_config"]

#: The plugins this server has, in the order CoreDNS chains them (plugin.cfg); `bind` configures the listeners.
ORDER: tuple[str, ...] = (
    "reload",
    "bind",
    "ready",
    "health",
    "prometheus",
    "errors",
    "log",
    "loadbalance",
    "cache",
    "kubernetes",
    "loop",
    "forward",
)
#: plugin name → module with `setup(directive, ctx) -> Plugin`.
PLUGINS: dict[str, str] = {
    name: f"pykubeadm.dns.plugins.{'kubernetes.plugin' if name == 'kubernetes' else name}"
    for name in ORDER
    if name != "bind"
}


@dataclass
class Block:
    """One server block: its keys, the addresses it listens on, its plugins (chain order) and the chain."""

    keys: list[ServerKey]
    hosts: list[str]
    plugins: list[Plugin]
    handler: Handler

    @property
    def zones(self) -> list[str]:
        return [k.zone for k in self.keys]


@dataclass
class Config:
    text: str
    blocks: list[Block]
    shared: dict[str, Any] = field(default_factory=dict)

    @property
    def plugins(self) -> list[Plugin]:
        seen: list[Plugin] = []
        for b in self.blocks:
            seen.extend(p for p in b.plugins if p not in seen)
        return seen


async def _no_next(req: Request) -> dns.message.Message:
    raise RuntimeError("plugin/" + req.extra.get("last", "server") + ": no next plugin found")


def _link(plugin: Plugin, next_: Handler) -> Handler:
    serve = plugin.serve

    async def handler(req: Request) -> dns.message.Message:
        return await serve(req, next_)

    return handler


def chain(plugins: list[Plugin]) -> Handler:
    """The handler running `plugins` in order; plugins that do not serve queries are left out."""
    handler: Handler = _no_next
    for plugin in reversed(plugins):
        if type(plugin).serve is not Plugin.serve:
            handler = _link(plugin, handler)
    return handler


def _setup_fn(name: str) -> Callable[..., Plugin]:
    return importlib.import_module(PLUGINS[name]).setup


def load_config(text: str, filename: str, *, dns_port: int, env: dict[str, str], corefile_path: str = "") -> Config:
    """Parse and set up every block (nothing is started). CorefileError / PluginError / ValueError on a bad file."""
    shared: dict[str, Any] = {}
    blocks: list[Block] = []
    seen: set[tuple[str, int]] = set()
    for sb in parse_corefile(text, filename, env):
        try:
            keys = [parse_server_key(k, dns_port) for k in sb.keys]
        except ValueError as err:
            raise CorefileError(filename, sb.line, str(err)) from None
        for k in keys:
            if (k.zone, k.port) in seen:
                raise CorefileError(filename, sb.line, f"cannot serve dns://{k.zone}:{k.port} - it is already defined")
            seen.add((k.zone, k.port))
        ctx = SetupContext(
            filename,
            [k.zone for k in keys],
            f"dns://:{keys[0].port}",
            dns_port,
            env=env,
            shared=shared,
            corefile_path=corefile_path,
        )
        hosts: list[str] = []
        by_name: dict[str, Plugin] = {}
        for d in sb.directives:
            if d.name == "bind":
                if not d.args:
                    raise PluginError("bind", d.arg_error())
                for a in d.args:
                    if not dns.inet.is_address(a):
                        raise PluginError("bind", d.error(f"not a valid IP address: {a}"))
                hosts.extend(d.args)
                continue
            if d.name not in PLUGINS:
                raise d.error(f"Unknown directive '{d.name}'")
            if d.name in by_name:
                raise PluginError(d.name, d.error("this plugin can only be used once per Server Block"))
            by_name[d.name] = _setup_fn(d.name)(d, ctx)
        plugins = [by_name[n] for n in ORDER if n in by_name]
        if hosts:
            ctx.server_label = f"dns://{hosts[0]}:{keys[0].port}"
        blocks.append(Block(keys, hosts or [listen_host("", ctx)], plugins, chain(plugins)))
    return Config(text, blocks, shared)
