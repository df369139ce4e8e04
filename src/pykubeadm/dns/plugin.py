"""What every plugin of the DNS server is: `Plugin` (serve a request, then maybe the next plugin), `Request`,
`SetupContext` (what a plugin's setup function gets) and `PluginError` (`plugin/<name>: …` at start-up).

Used by `dns.setup` (builds each server block's chain in CoreDNS's plugin order) and by every module of
`dns.plugins`. A handler is `async (Request) -> dns.message.Message`; a plugin's `serve(req, next)` answers itself or
awaits `next(req)` and may rewrite the reply (cache, loadbalance). An exception in a plugin becomes SERVFAIL.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import dns.flags
import dns.message
import dns.name
import dns.rcode

from pykubeadm import constants as c

__all__ = [
    "POD_IP_ENV",
    "Handler",
    "Plugin",
    "PluginError",
    "Request",
    "SetupContext",
    "absolute_zone",
    "in_zone",
    "listen_host",
    "make_reply",
    "split_host_port",
]

#: The Pod's IP, set by the built-in kubelet for every container. Listeners whose address is left empty (`.:53`,
#: `:8080`) bind it; without it they bind all addresses.
POD_IP_ENV = c.POD_IP_ENV

_RA = int(dns.flags.RA)
_DO = int(dns.flags.DO)
_RA_AA = int(dns.flags.RA | dns.flags.AA)


class PluginError(Exception):
    """A plugin's setup failed: printed as `plugin/<name>: <message>` (CoreDNS's plugin.Error)."""

    def __init__(self, plugin: str, message: str | Exception):
        super().__init__(f"plugin/{plugin}: {message}")
        self.plugin = plugin


@dataclass
class Request:
    """One query being served: the parsed message plus where it came from and which server block serves it."""

    msg: dns.message.Message
    client: tuple[str, int]
    proto: str  # "udp" | "tcp"
    server: str  # "dns://:53" (the metrics label)
    zone: str  # the server block zone that matched, e.g. "."
    qname: dns.name.Name
    qtype: int
    qclass: int
    #: The largest UDP reply the client accepts (512 without EDNS).
    max_size: int = 512
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def name_text(self) -> str:
        """The query name in lower case, absolute (`svc.ns.svc.cluster.local.`)."""
        text = self.extra.get("name_text")
        if text is None:
            text = self.extra["name_text"] = self.qname.to_text().lower()
        return text

    @property
    def do(self) -> bool:
        return bool(self.msg.ednsflags & _DO)


Handler = Callable[[Request], Awaitable[dns.message.Message]]


class Plugin:
    """A plugin of a server block's chain. `start`/`stop` run with the server (listeners, watches)."""

    name = "plugin"

    async def serve(self, req: Request, next_: Handler) -> dns.message.Message:
        return await next_(req)

    async def start(self) -> None:
        """Start background work (HTTP listeners, watches); called once the chain is built."""

    async def stop(self) -> None:
        """Stop what `start` started."""

    def ready(self) -> bool:
        """For the ready plugin: has this plugin finished starting (e.g. the kubernetes plugin's first sync)?"""
        return True


@dataclass
class SetupContext:
    """What a plugin's setup function sees: the block's zones, the config file name, shared state of the server."""

    filename: str
    zones: list[str]
    server_label: str
    dns_port: int
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    #: Set by the server: every plugin of every block (the ready plugin asks them), shared per process.
    shared: dict[str, Any] = field(default_factory=dict)
    #: The path of the Corefile as given on the command line (the reload plugin watches it).
    corefile_path: str = ""

    @property
    def pod_ip(self) -> str:
        return self.env.get(POD_IP_ENV, "")


def absolute_zone(text: str) -> str:
    """A zone as the plugins compare names: lower case, ending in a dot."""
    zone = text.lower()
    return zone if zone.endswith(".") else zone + "."


def in_zone(name: str, zone: str) -> bool:
    """Is the (lower-case, absolute) `name` at or below `zone`?"""
    return zone == "." or name == zone or name.endswith("." + zone)


def split_host_port(value: str, default_port: int) -> tuple[str, int]:
    """`:8080` → ("", 8080), `127.0.0.1:53` → ("127.0.0.1", 53), `[::1]:53` → ("::1", 53), `1.2.3.4` → default port."""
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else default_port
    if value.count(":") == 1:
        host, port = value.split(":")
        return host, int(port)
    return value, default_port


def listen_host(host: str, ctx: SetupContext) -> str:
    """The address to bind for `host`: itself if given, else the Pod's IP ($PYKUBEADM_POD_IP), else all addresses."""
    return host or ctx.pod_ip or "0.0.0.0"


def make_reply(req: Request, rcode: int = dns.rcode.NOERROR, *, authoritative: bool = False) -> dns.message.Message:
    """A reply to `req` with its question, RD copied, RA set (we recurse through forward) and `rcode`."""
    reply = dns.message.make_response(req.msg)
    reply.flags = int(reply.flags) | (_RA_AA if authoritative else _RA)  # plain ints: enum.Flag arithmetic is slow
    if rcode:
        reply.set_rcode(dns.rcode.Rcode.make(rcode))
    return reply
