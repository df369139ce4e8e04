"""The loadbalance plugin: shuffle the A, AAAA and MX records of every answer (round robin), CNAMEs stay first."""

from __future__ import annotations

import random

import dns.message
import dns.rdatatype
import dns.rrset

from pykubeadm.dns.corefile import Directive
from pykubeadm.dns.plugin import Handler, Plugin, PluginError, Request, SetupContext

__all__ = ["LoadbalancePlugin", "setup"]

_SHUFFLED = (dns.rdatatype.A, dns.rdatatype.AAAA, dns.rdatatype.MX)


def shuffle(rrset: dns.rrset.RRset) -> dns.rrset.RRset:
    """A copy of `rrset` whose records are in random order (the original may be shared, e.g. by an index)."""
    items = list(rrset)
    random.shuffle(items)
    out = dns.rrset.RRset(rrset.name, rrset.rdclass, rrset.rdtype)
    for rd in items:
        out.add(rd, rrset.ttl)
    return out


class LoadbalancePlugin(Plugin):
    name = "loadbalance"

    async def serve(self, req: Request, next_: Handler) -> dns.message.Message:
        reply = await next_(req)
        if any(len(r) > 1 and r.rdtype in _SHUFFLED for r in reply.answer):
            reply.answer = [shuffle(r) if len(r) > 1 and r.rdtype in _SHUFFLED else r for r in reply.answer]
        return reply


def setup(d: Directive, ctx: SetupContext) -> LoadbalancePlugin:
    if len(d.args) > 1 or (d.args and d.args[0] != "round_robin"):
        raise PluginError("loadbalance", d.error(f"unknown policy: {d.args[0]}") if d.args else d.arg_error())
    if d.block:
        raise PluginError("loadbalance", d.block[0].unknown_property())
    return LoadbalancePlugin()
