"""The forward plugin: names under FROM sent to upstream resolvers, UDP first and TCP when the answer is truncated.

`forward FROM TO… { max_concurrent N; except ZONES…; policy random|round_robin|sequential; force_tcp; prefer_udp;
expire/max_fails/health_check (accepted) }`. A TO is `IP[:PORT]`, `dns://IP[:PORT]`, or a resolv.conf file whose
`nameserver` lines are used (port 53, as CoreDNS reads it; parsed by dnspython's resolver). The upstreams are tried
in the policy's order until one answers (2 s each, 5 s in all); none answering raises (the errors plugin makes
that SERVFAIL). More than max_concurrent queries in flight are REFUSED, as CoreDNS does. Wire work is dnspython's
(`dns.asyncquery`).
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from pathlib import Path

import dns.asyncquery
import dns.exception
import dns.flags
import dns.inet
import dns.message
import dns.rcode
import dns.resolver

from pykubeadm.dns import metrics
from pykubeadm.dns.corefile import Directive
from pykubeadm.dns.plugin import (
    Handler,
    Plugin,
    PluginError,
    Request,
    SetupContext,
    absolute_zone,
    in_zone,
    make_reply,
    split_host_port,
)

__all__ = ["ForwardPlugin", "parse_upstreams", "setup"]

log = logging.getLogger("plugin/forward")

#: Per-upstream read timeout and the whole query's budget (CoreDNS: 2 s reads, 5 s in all).
TRY_TIMEOUT = 2.0
TOTAL_TIMEOUT = 5.0
_POLICIES = ("random", "round_robin", "sequential")


def parse_upstreams(targets: list[str]) -> list[tuple[str, int]]:
    """(address, port) of every TO: addresses, `dns://` addresses, resolv.conf files. ValueError names a bad one."""
    out: list[tuple[str, int]] = []
    for target in targets:
        if "://" in target:
            scheme, target = target.split("://", 1)
            if scheme != "dns":
                raise ValueError(f"only dns:// upstreams are supported, not {scheme}://")
        if target.startswith("/") or Path(target).is_file():
            try:
                conf = dns.resolver.Resolver(filename=target, configure=True)
            except (dns.resolver.NoResolverConfiguration, OSError) as err:
                raise ValueError(f"no nameservers found in {target}: {err}") from err
            out.extend((str(ns), 53) for ns in conf.nameservers)
            continue
        host, port = split_host_port(target, 53)
        if not dns.inet.is_address(host):
            raise ValueError(f"not an IP address or file: {target!r}")
        out.append((host, port))
    if not out:
        raise ValueError("no nameservers found")
    return out


class ForwardPlugin(Plugin):
    name = "forward"

    def __init__(
        self,
        zone: str,
        upstreams: list[tuple[str, int]],
        *,
        max_concurrent: int,
        excepted: list[str],
        policy: str,
        force_tcp: bool,
    ):
        self.zone = zone
        self.upstreams = upstreams
        self.max_concurrent = max_concurrent
        self.excepted = excepted
        self.policy = policy
        self.force_tcp = force_tcp
        self.in_flight = 0
        self._rr = itertools.count()

    def _order(self) -> list[tuple[str, int]]:
        if self.policy == "sequential" or len(self.upstreams) == 1:
            return list(self.upstreams)
        if self.policy == "round_robin":
            i = next(self._rr) % len(self.upstreams)
            return self.upstreams[i:] + self.upstreams[:i]
        return random.sample(self.upstreams, len(self.upstreams))

    async def serve(self, req: Request, next_: Handler) -> dns.message.Message:
        name = req.name_text
        if not in_zone(name, self.zone) or any(in_zone(name, z) for z in self.excepted):
            return await next_(req)
        if self.max_concurrent and self.in_flight >= self.max_concurrent:
            metrics.FORWARD_REJECTS.inc()
            req.extra["writer"] = self.name
            return make_reply(req, dns.rcode.REFUSED)
        self.in_flight += 1
        try:
            reply = await self._exchange(req.msg)
        finally:
            self.in_flight -= 1
        req.extra["writer"] = self.name
        return reply

    async def _exchange(self, query: dns.message.Message) -> dns.message.Message:
        deadline = time.monotonic() + TOTAL_TIMEOUT
        errors: list[str] = []
        for host, port in self._order():
            budget = min(TRY_TIMEOUT, deadline - time.monotonic())
            if budget <= 0:
                break
            start = time.perf_counter()
            try:
                reply = await self._query(query, host, port, budget)
            except (OSError, dns.exception.DNSException, EOFError) as err:
                errors.append(f"{host}:{port}: {err or type(err).__name__}")
                continue
            metrics.PROXY_DURATION.labels("forward", f"{host}:{port}", dns.rcode.to_text(reply.rcode())).observe(
                time.perf_counter() - start
            )
            return reply
        raise OSError("no upstream answered: " + "; ".join(errors))

    async def _query(self, query: dns.message.Message, host: str, port: int, timeout: float) -> dns.message.Message:
        if not self.force_tcp:
            reply = await dns.asyncquery.udp(query, host, timeout=timeout, port=port, ignore_unexpected=True)
            if not reply.flags & dns.flags.TC:
                return reply
        return await dns.asyncquery.tcp(query, host, timeout=timeout, port=port)


def setup(d: Directive, ctx: SetupContext) -> ForwardPlugin:
    if len(d.args) < 2:
        raise PluginError("forward", d.arg_error())
    try:
        upstreams = parse_upstreams(d.args[1:])
    except ValueError as err:
        raise PluginError("forward", d.error(str(err))) from None
    max_concurrent, policy, force_tcp = 0, "random", False
    excepted: list[str] = []
    for p in d.block:
        if p.name == "max_concurrent":
            if len(p.args) != 1 or not p.args[0].isdigit():
                raise PluginError("forward", p.arg_error())
            max_concurrent = int(p.args[0])
        elif p.name == "except":
            excepted.extend(absolute_zone(z) for z in p.args)
        elif p.name == "policy":
            if len(p.args) != 1 or p.args[0] not in _POLICIES:
                raise PluginError("forward", p.error(f"unknown policy '{' '.join(p.args)}'"))
            policy = p.args[0]
        elif p.name == "force_tcp":
            force_tcp = True
        elif p.name in (
            "prefer_udp",
            "expire",
            "max_fails",
            "health_check",
            "next",
            "failfast_all_unhealthy_upstreams",
        ):
            log.debug("%s accepted", p.name)
        else:
            raise PluginError("forward", p.unknown_property())
    return ForwardPlugin(
        absolute_zone(d.args[0]),
        upstreams,
        max_concurrent=max_concurrent,
        excepted=excepted,
        policy=policy,
        force_tcp=force_tcp,
    )
