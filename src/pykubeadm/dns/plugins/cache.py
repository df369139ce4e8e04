"""The cache plugin: answers of the plugins after it kept for their TTL, capped (`cache [TTL] [ZONES…]`).

Positive answers (NOERROR with records) are "success", NXDOMAIN and NODATA are "denial" (TTL from the SOA);
each is capped at its maximum TTL (`cache 30` caps both at 30 s; `success CAPACITY [TTL [MINTTL]]`,
`denial CAPACITY [TTL [MINTTL]]`) and held at least MINTTL (5 s). `disable success|denial [ZONES…]` keeps names
of those zones out (kubeadm's Corefile: the cluster zone, whose answers change with every watch event). A hit
is served with its TTLs counted down. Truncated and SERVFAIL answers are not kept.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass

import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset

from pykubeadm.dns import metrics
from pykubeadm.dns.corefile import Directive
from pykubeadm.dns.plugin import Handler, Plugin, PluginError, Request, SetupContext, absolute_zone, in_zone, make_reply

__all__ = ["CachePlugin", "setup"]

log = logging.getLogger("plugin/cache")

DEFAULT_CAPACITY = 9984
MAX_TTL = 3600
DENIAL_MAX_TTL = 1800
MIN_TTL = 5


@dataclass
class _Entry:
    stored: float
    ttl: int
    rcode: int
    flags: int
    answer: list[dns.rrset.RRset]
    authority: list[dns.rrset.RRset]
    additional: list[dns.rrset.RRset]


@dataclass
class _Kind:
    capacity: int = DEFAULT_CAPACITY
    max_ttl: int = MAX_TTL
    min_ttl: int = MIN_TTL
    disabled: tuple[str, ...] = ()


def _aged(rrsets: list[dns.rrset.RRset], age: int, cap: int | None = None) -> list[dns.rrset.RRset]:
    """Copies of `rrsets` (they may be shared) with TTLs counted down by `age` and at most `cap`."""
    out = []
    for r in rrsets:
        copy = dns.rrset.RRset(r.name, r.rdclass, r.rdtype)
        copy.update(r)
        ttl = max(0, r.ttl - age)
        copy.ttl = ttl if cap is None else min(ttl, cap)
        out.append(copy)
    return out


class CachePlugin(Plugin):
    name = "cache"

    def __init__(self, zones: list[str], success: _Kind, denial: _Kind, server: str):
        self.zones = zones
        self.kinds = {"success": success, "denial": denial}
        self.entries: dict[str, OrderedDict[tuple[str, int, int, bool, bool], _Entry]] = {
            "success": OrderedDict(),
            "denial": OrderedDict(),
        }
        self.server = server
        self._zones_label = ",".join(zones)

    def _lookup(self, key: tuple[str, int, int, bool, bool], now: float) -> tuple[str, _Entry] | None:
        for kind, store in self.entries.items():
            entry = store.get(key)
            if entry is None:
                continue
            if now - entry.stored < entry.ttl:
                return kind, entry
            del store[key]
        return None

    async def serve(self, req: Request, next_: Handler) -> dns.message.Message:
        name = req.name_text
        if not any(in_zone(name, z) for z in self.zones):
            return await next_(req)
        key = (name, req.qtype, req.qclass, req.do, bool(req.msg.flags & dns.flags.CD))
        now = time.monotonic()
        metrics.CACHE_REQUESTS.labels(self.server, self._zones_label, "").inc()
        hit = self._lookup(key, now)
        if hit is not None:
            kind, entry = hit
            metrics.CACHE_HITS.labels(self.server, kind, self._zones_label, "").inc()
            age = int(now - entry.stored)
            reply = make_reply(req, entry.rcode)
            reply.flags = (reply.flags & ~dns.flags.AA) | (entry.flags & dns.flags.AA)
            reply.answer = _aged(entry.answer, age)
            reply.authority = _aged(entry.authority, age)
            reply.additional = _aged(entry.additional, age)
            req.extra["writer"] = "cache"
            return reply
        metrics.CACHE_MISSES.labels(self.server, self._zones_label, "").inc()
        reply = await next_(req)
        self._store(key, name, reply, now)
        return reply

    def _store(self, key: tuple[str, int, int, bool, bool], name: str, reply: dns.message.Message, now: float) -> None:
        """Keep `reply` and cap its TTLs to the cached duration (as CoreDNS, so a client never sees 1799 then 8)."""
        if reply.flags & dns.flags.TC:
            return
        rcode = reply.rcode()
        if rcode == dns.rcode.NOERROR and reply.answer:
            kind = "success"
            ttls = [r.ttl for r in (*reply.answer, *reply.authority)]
        elif rcode == dns.rcode.NXDOMAIN or (rcode == dns.rcode.NOERROR and not reply.answer):
            kind = "denial"
            soa = [r for r in reply.authority if r.rdtype == dns.rdatatype.SOA]
            ttls = [min(r.ttl, next(iter(r)).minimum) for r in soa] or [r.ttl for r in reply.authority]
        else:
            return
        spec = self.kinds[kind]
        if any(in_zone(name, z) for z in spec.disabled) or not ttls:
            return
        ttl = max(spec.min_ttl, min(min(ttls), spec.max_ttl))
        reply.answer = _aged(reply.answer, 0, ttl)
        reply.authority = _aged(reply.authority, 0, ttl)
        additional = _aged([r for r in reply.additional if r.rdtype != dns.rdatatype.OPT], 0, ttl)
        store = self.entries[kind]
        store[key] = _Entry(now, ttl, rcode, reply.flags, reply.answer, reply.authority, additional)
        store.move_to_end(key)
        while len(store) > spec.capacity:
            store.popitem(last=False)
        metrics.CACHE_ENTRIES.labels(self.server, kind, self._zones_label, "").set(len(store))


def _kind_args(p: Directive, spec: _Kind) -> None:
    if not 1 <= len(p.args) <= 3:
        raise PluginError("cache", p.arg_error())
    try:
        values = [int(a) for a in p.args]
    except ValueError:
        raise PluginError("cache", p.error(f"invalid {p.name} values: {' '.join(p.args)}")) from None
    spec.capacity = values[0]
    if len(values) > 1:
        spec.max_ttl = values[1]
    if len(values) > 2:
        spec.min_ttl = values[2]


def setup(d: Directive, ctx: SetupContext) -> CachePlugin:
    """`cache [TTL] [ZONES…] { success/denial/disable/prefetch/serve_stale/keepttl }`."""
    success, denial = _Kind(), _Kind(max_ttl=DENIAL_MAX_TTL)
    args = list(d.args)
    if args and args[0].isdigit():
        ttl = int(args.pop(0))
        if ttl <= 0:
            raise PluginError("cache", d.error(f"cache TTL can not be zero or negative: {ttl}"))
        success.max_ttl = denial.max_ttl = ttl
        success.min_ttl, denial.min_ttl = min(MIN_TTL, ttl), min(MIN_TTL, ttl)
    zones = [absolute_zone(z) for z in args] or [absolute_zone(z) for z in ctx.zones]
    for p in d.block:
        if p.name in ("success", "denial"):
            _kind_args(p, success if p.name == "success" else denial)
        elif p.name == "disable":
            if not p.args or p.args[0] not in ("success", "denial"):
                raise PluginError("cache", p.error("cache type for disable must be 'success' or 'denial'"))
            spec = success if p.args[0] == "success" else denial
            spec.disabled = tuple(absolute_zone(z) for z in p.args[1:]) or tuple(zones)
        elif p.name in ("prefetch", "serve_stale", "keepttl", "servfail"):
            log.warning("%s is accepted but not implemented by this server", p.name)
        else:
            raise PluginError("cache", p.unknown_property())
    return CachePlugin(zones, success, denial, ctx.server_label)
