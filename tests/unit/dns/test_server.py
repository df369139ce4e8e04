"""Routing a wire query to its server block and sizing the wire reply (no sockets)."""

from __future__ import annotations

import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.rdatatype

from pykubeadm.dns.server import Router
from pykubeadm.dns.setup import load_config

COREFILE = """
cluster.local:53 {
    kubernetes {
        ttl 30
    }
}
example.org:53 {
    errors
}
"""


def _router():
    from .test_records import SERVICES, SLICES

    config = load_config(COREFILE, "Corefile", dns_port=53, env={})
    config.blocks[0].plugins[0].load(SERVICES, SLICES)
    return Router(53, config.blocks)


async def _answer(router: Router, msg: dns.message.Message) -> dns.message.Message:
    wire = await router.answer(msg.to_wire(), ("127.0.0.1", 1), "udp")
    assert wire is not None
    return dns.message.from_wire(wire)


async def test_queries_go_to_the_block_of_their_zone():
    router = _router()
    reply = await _answer(router, dns.message.make_query("web.default.svc.cluster.local.", "A"))
    assert reply.rcode() == dns.rcode.NOERROR and reply.answer
    # example.org's block has no plugin that answers: SERVFAIL ("no next plugin found")
    assert (await _answer(router, dns.message.make_query("www.example.org.", "A"))).rcode() == dns.rcode.SERVFAIL
    # no block serves other names
    assert (await _answer(router, dns.message.make_query("example.com.", "A"))).rcode() == dns.rcode.REFUSED


async def test_not_a_query():
    router = _router()
    notify = dns.message.make_query("cluster.local.", "SOA")
    notify.set_opcode(dns.opcode.NOTIFY)
    assert (await _answer(router, notify)).rcode() == dns.rcode.NOTIMP
    response = dns.message.make_response(dns.message.make_query("cluster.local.", "SOA"))
    assert await router.answer(response.to_wire(), ("127.0.0.1", 1), "udp") is None
    assert await router.answer(b"\x00\x01garbage", ("127.0.0.1", 1), "udp") is None


async def test_udp_replies_that_do_not_fit_are_truncated():

    from .test_records import endpoint_slice, ep, service

    config = load_config(COREFILE, "Corefile", dns_port=53, env={})
    many = [ep(f"10.1.{i // 250}.{i % 250 + 1}") for i in range(100)]
    config.blocks[0].plugins[0].load([service("big", cluster_ip="None")], [endpoint_slice("big", endpoints=many)])
    router = Router(53, config.blocks)
    query = dns.message.make_query("big.default.svc.cluster.local.", "A", use_edns=False)
    udp = await _answer(router, query)
    assert udp.flags & dns.flags.TC and not udp.answer
    wire = await router.answer(query.to_wire(), ("127.0.0.1", 1), "tcp")
    assert wire is not None
    tcp = dns.message.from_wire(wire)
    assert not tcp.flags & dns.flags.TC and len(tcp.answer[0]) == 100
    big = dns.message.make_query("big.default.svc.cluster.local.", "A", use_edns=0, payload=4096)
    assert len((await _answer(router, big)).answer[0]) == 100  # fits the client's EDNS buffer
