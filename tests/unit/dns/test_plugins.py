"""Plugin behaviour without sockets: cache TTLs and disabled zones, loadbalance, forward's upstream list, ready."""

from __future__ import annotations

import dns.message
import dns.rcode
import dns.rrset
import pytest

from pykubeadm.dns.corefile import parse_corefile
from pykubeadm.dns.plugin import Plugin, Request, SetupContext
from pykubeadm.dns.plugins import cache, loadbalance
from pykubeadm.dns.plugins.forward import parse_upstreams
from pykubeadm.dns.plugins.ready import ReadyPlugin


def _setup(module, text: str, zones=(".",)):
    d = parse_corefile(".:53 {\n" + text + "\n}\n")[0].directives[0]
    return module.setup(d, SetupContext("Corefile", list(zones), "dns://:53", 53, env={}))


def _request(name: str, qtype: str = "A") -> Request:
    msg = dns.message.make_query(name, qtype)
    q = msg.question[0]
    return Request(msg, ("127.0.0.1", 5000), "udp", "dns://:53", ".", q.name, q.rdtype, q.rdclass)


class _Upstream:
    """The next plugin: answers every query with `rrset` (or NXDOMAIN with a SOA) and counts the calls."""

    def __init__(self, ttl: int = 300, nxdomain: bool = False):
        self.calls = 0
        self.ttl = ttl
        self.nxdomain = nxdomain

    async def __call__(self, req: Request) -> dns.message.Message:
        self.calls += 1
        reply = dns.message.make_response(req.msg)
        if self.nxdomain:
            reply.set_rcode(dns.rcode.NXDOMAIN)
            reply.authority.append(dns.rrset.from_text("test.", 600, "IN", "SOA", "ns. h. 1 2 3 4 900"))
        else:
            reply.answer.append(dns.rrset.from_text(req.qname, self.ttl, "IN", "A", "192.0.2.1", "192.0.2.2"))
        return reply


async def test_cache_caps_ttls_and_answers_hits_itself():
    plugin = _setup(cache, "cache 30")
    upstream = _Upstream(ttl=300)
    first = await plugin.serve(_request("a.test."), upstream)
    assert first.answer[0].ttl == 30  # capped on the first reply too
    second = await plugin.serve(_request("a.test."), upstream)
    assert upstream.calls == 1 and second.answer[0].ttl <= 30
    assert [rd.to_text() for rd in second.answer[0]] == ["192.0.2.1", "192.0.2.2"]


async def test_cache_denial_ttl_comes_from_the_soa_and_is_capped():
    plugin = _setup(cache, "cache 30")
    upstream = _Upstream(nxdomain=True)
    reply = await plugin.serve(_request("gone.test."), upstream)
    assert reply.rcode() == dns.rcode.NXDOMAIN and reply.authority[0].ttl == 30
    await plugin.serve(_request("gone.test."), upstream)
    assert upstream.calls == 1


async def test_cache_disable_keeps_the_cluster_zone_out():
    plugin = _setup(cache, "cache 30 {\n disable success cluster.local\n disable denial cluster.local\n }")
    upstream = _Upstream()
    for _ in range(2):
        await plugin.serve(_request("web.default.svc.cluster.local."), upstream)
    assert upstream.calls == 2
    nx = _Upstream(nxdomain=True)
    for _ in range(2):
        await plugin.serve(_request("nope.default.svc.cluster.local."), nx)
    assert nx.calls == 2


def test_cache_rejects_unknown_properties():
    with pytest.raises(Exception, match=r"plugin/cache: Corefile:3 - Error during parsing: unknown property 'x'"):
        _setup(cache, "cache 30 {\n x\n }")


async def test_loadbalance_shuffles_a_copy_and_keeps_the_records():
    plugin = _setup(loadbalance, "loadbalance")
    shared = dns.rrset.from_text("lb.test.", 30, "IN", "A", *[f"192.0.2.{i}" for i in range(1, 9)])
    original = [rd.to_text() for rd in shared]

    async def next_(req: Request) -> dns.message.Message:
        reply = dns.message.make_response(req.msg)
        reply.answer.append(shared)
        return reply

    orders = set()
    for _ in range(20):
        reply = await plugin.serve(_request("lb.test."), next_)
        got = [rd.to_text() for rd in reply.answer[0]]
        assert sorted(got) == sorted(original)
        orders.add(tuple(got))
    assert len(orders) > 1
    assert [rd.to_text() for rd in shared] == original  # the shared RRset is untouched


def test_forward_reads_nameservers_from_resolv_conf(tmp_path):
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("search example.org\nnameserver 127.0.0.53\nnameserver ::1\noptions edns0\n")
    assert parse_upstreams([str(resolv)]) == [("127.0.0.53", 53), ("::1", 53)]
    assert parse_upstreams(["127.0.0.1:5353", "dns://127.0.0.2"]) == [("127.0.0.1", 5353), ("127.0.0.2", 53)]
    with pytest.raises(ValueError, match="only dns://"):
        parse_upstreams(["tls://127.0.0.1"])


async def test_ready_lists_plugins_not_ready_yet():
    class Waiting(Plugin):
        name = "kubernetes"

        def ready(self) -> bool:
            return False

    ctx = SetupContext("Corefile", ["."], "dns://:53", 53, env={})
    ctx.shared["plugins"] = [Waiting()]
    ready = ReadyPlugin(ctx)
    res = await ready.handle(None)  # type: ignore[arg-type]
    assert (res.status, res.text) == (503, "kubernetes")
    ctx.shared["plugins"] = []
    res = await ready.handle(None)  # type: ignore[arg-type]
    assert (res.status, res.text) == (200, "OK")
