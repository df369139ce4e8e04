"""The log plugin: one line per query in CoreDNS's common format, e.g.
`[INFO] 127.0.0.1:40112 - 4242 "A IN svc.ns.svc.cluster.local. udp 52 false 512" NOERROR qr,aa,rd 106 0.00021s`.
"""

from __future__ import annotations

import logging
import time

import dns.flags
import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype

from pykubeadm.dns.corefile import Directive
from pykubeadm.dns.plugin import Handler, Plugin, PluginError, Request, SetupContext

__all__ = ["LogPlugin", "setup"]

log = logging.getLogger("plugin/log")
_FLAG_NAMES = (
    ("qr", dns.flags.QR),
    ("aa", dns.flags.AA),
    ("tc", dns.flags.TC),
    ("rd", dns.flags.RD),
    ("ra", dns.flags.RA),
    ("ad", dns.flags.AD),
    ("cd", dns.flags.CD),
)


class LogPlugin(Plugin):
    name = "log"

    async def serve(self, req: Request, next_: Handler) -> dns.message.Message:
        start = time.perf_counter()
        reply = await next_(req)
        flags = ",".join(n for n, f in _FLAG_NAMES if reply.flags & f)
        log.info(
            '%s:%d - %d "%s %s %s %s %d %s %d" %s %s %.6fs',
            req.client[0],
            req.client[1],
            req.msg.id,
            dns.rdatatype.RdataType.to_text(req.qtype),
            dns.rdataclass.RdataClass.to_text(req.qclass),
            req.qname,
            req.proto,
            req.extra.get("size", 0),
            str(req.do).lower(),
            req.max_size,
            dns.rcode.to_text(reply.rcode()),
            flags,
            time.perf_counter() - start,
        )
        return reply


def setup(d: Directive, ctx: SetupContext) -> LogPlugin:
    if d.block:
        raise PluginError("log", d.block[0].unknown_property())
    return LogPlugin()
