"""`pykubeadm component coredns` as kubeadm runs it: kubeadm's Corefile, a real apiserver, an upstream we run.

Services and EndpointSlices are created through the API; the server is a real process on a free loopback port
queried with dnspython over UDP and TCP.
"""

from __future__ import annotations

import time
from pathlib import Path

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.reversename
import pytest
from kubernetes import client as k8s

from .conftest import UPSTREAM_A, forward_target, kubeadm_corefile, start_dns

pytestmark = pytest.mark.integration


def _service(name: str, *, headless: bool = False, ports=None, external: str | None = None) -> k8s.V1Service:
    spec = k8s.V1ServiceSpec(ports=ports or [k8s.V1ServicePort(name="http", port=80, protocol="TCP")])
    if headless:
        spec.cluster_ip = "None"
    if external:
        spec = k8s.V1ServiceSpec(type="ExternalName", external_name=external)
    return k8s.V1Service(metadata=k8s.V1ObjectMeta(name=name), spec=spec)


def _slice(service: str, addresses: list[tuple[str, str | None]]) -> k8s.V1EndpointSlice:
    return k8s.V1EndpointSlice(
        metadata=k8s.V1ObjectMeta(name=f"{service}-x1", labels={"kubernetes.io/service-name": service}),
        address_type="IPv4",
        endpoints=[
            k8s.V1Endpoint(addresses=[ip], hostname=host, conditions=k8s.V1EndpointConditions(ready=True))
            for ip, host in addresses
        ],
        ports=[k8s.DiscoveryV1EndpointPort(name="pg", port=5432, protocol="TCP")],
    )


@pytest.fixture(scope="module")
def cluster(api):
    """Services: web (ClusterIP, named port http), db (headless, two endpoints), ext (ExternalName)."""
    api_client = api.python_client()
    core, disco = k8s.CoreV1Api(api_client), k8s.DiscoveryV1Api(api_client)
    web = core.create_namespaced_service("default", _service("web"))
    core.create_namespaced_service(
        "default", _service("db", headless=True, ports=[k8s.V1ServicePort(name="pg", port=5432)])
    )
    disco.create_namespaced_endpoint_slice("default", _slice("db", [("10.0.0.7", "db-0"), ("10.0.0.8", None)]))
    core.create_namespaced_service("default", _service("ext", external="www.example.test"))
    return {"core": core, "web_ip": web.spec.cluster_ip}


@pytest.fixture(scope="module")
def server(api, cluster, upstream, tmp_path_factory):
    directory: Path = tmp_path_factory.mktemp("coredns")
    forward = forward_target(upstream, directory)
    extra = f"       kubeconfig {api.kubeconfig()}\n"
    proc = start_dns(directory, lambda port, http: kubeadm_corefile(port, http, forward, extra))
    try:
        yield proc
    finally:
        proc.stop()


def ask(server, name, qtype, *, tcp: bool = False) -> dns.message.Message:
    query = dns.message.make_query(name, qtype)
    if tcp:
        return dns.query.tcp(query, server.host, port=server.port, timeout=10)
    return dns.query.udp(query, server.host, port=server.port, timeout=10)


def texts(reply: dns.message.Message, rdtype: int | None = None) -> list[str]:
    return sorted(rd.to_text() for r in reply.answer if rdtype is None or r.rdtype == rdtype for rd in r)


def test_start_up_lines_like_coredns(server):
    out = server.output()
    assert f".:{server.port}\n" in out
    assert "CoreDNS-1.12.0\n" in out
    assert "linux/" in out and "python3." in out
    assert "[INFO] plugin/reload: Running configuration SHA512 = " in out


def test_cluster_ip_service_a_record(server, cluster):
    for tcp in (False, True):
        reply = ask(server, "web.default.svc.cluster.local.", "A", tcp=tcp)
        assert reply.rcode() == dns.rcode.NOERROR and reply.flags & dns.flags.AA
        assert texts(reply) == [cluster["web_ip"]]
        assert reply.answer[0].ttl == 30


def test_headless_service_returns_both_endpoints(server):
    reply = ask(server, "db.default.svc.cluster.local.", "A")
    assert texts(reply) == ["10.0.0.7", "10.0.0.8"]
    assert texts(ask(server, "db-0.db.default.svc.cluster.local.", "A")) == ["10.0.0.7"]


def test_srv_for_named_ports(server):
    reply = ask(server, "_http._tcp.web.default.svc.cluster.local.", "SRV")
    assert texts(reply) == ["0 100 80 web.default.svc.cluster.local."]
    headless = ask(server, "_pg._tcp.db.default.svc.cluster.local.", "SRV")
    assert texts(headless) == [
        "0 50 5432 10-0-0-8.db.default.svc.cluster.local.",
        "0 50 5432 db-0.db.default.svc.cluster.local.",
    ]


def test_ptr_for_a_cluster_ip(server, cluster):
    reply = ask(server, dns.reversename.from_address(cluster["web_ip"]), "PTR")
    assert texts(reply) == ["web.default.svc.cluster.local."]


def test_external_name_is_a_cname_to_the_resolved_target(server):
    reply = ask(server, "ext.default.svc.cluster.local.", "A")
    assert texts(reply, dns.rdatatype.CNAME) == ["www.example.test."]
    assert texts(reply, dns.rdatatype.A) == [UPSTREAM_A["www.example.test."]]  # the target, through forward


def test_missing_name_is_nxdomain_with_the_soa(server):
    reply = ask(server, "missing.default.svc.cluster.local.", "A")
    assert reply.rcode() == dns.rcode.NXDOMAIN and not reply.answer
    (soa,) = reply.authority
    assert soa.rdtype == dns.rdatatype.SOA
    rd = soa[0]
    assert (rd.mname.to_text(), rd.rname.to_text()) == ("ns.dns.cluster.local.", "hostmaster.cluster.local.")
    assert (rd.refresh, rd.retry, rd.expire, rd.minimum) == (7200, 1800, 86400, 30)


def test_pod_record_and_dns_version(server):
    assert texts(ask(server, "10-244-0-5.default.pod.cluster.local.", "A")) == ["10.244.0.5"]
    assert texts(ask(server, "dns-version.cluster.local.", "TXT")) == ['"1.1.0"']


def test_service_created_after_start_appears(server, cluster):
    svc = cluster["core"].create_namespaced_service("default", _service("late"))
    deadline = time.monotonic() + 30
    reply = ask(server, "late.default.svc.cluster.local.", "A")
    while reply.rcode() != dns.rcode.NOERROR and time.monotonic() < deadline:
        time.sleep(0.1)
        reply = ask(server, "late.default.svc.cluster.local.", "A")
    assert texts(reply) == [svc.spec.cluster_ip]
    cluster["core"].delete_namespaced_service("late", "default")
    deadline = time.monotonic() + 30
    while reply.rcode() != dns.rcode.NXDOMAIN and time.monotonic() < deadline:
        time.sleep(0.1)
        reply = ask(server, "late.default.svc.cluster.local.", "A")
    assert reply.rcode() == dns.rcode.NXDOMAIN


def test_other_names_are_forwarded_and_cached(server, upstream):
    before = len([q for q in upstream.queries if q[0] == "upstream.test."])
    first = ask(server, "upstream.test.", "A")
    assert texts(first) == ["192.0.2.1"]
    assert first.answer[0].ttl <= 30  # capped by `cache 30`
    second = ask(server, "upstream.test.", "A")
    assert texts(second) == ["192.0.2.1"]
    assert len([q for q in upstream.queries if q[0] == "upstream.test."]) == before + 1  # the second was a hit
    nx = ask(server, "nothing.test.", "A")
    assert nx.rcode() == dns.rcode.NXDOMAIN


def test_truncated_upstream_answer_is_fetched_over_tcp(server, upstream):
    reply = ask(server, "big.upstream.test.", "TXT", tcp=True)
    assert len(texts(reply)) == 20
    assert ("big.upstream.test.", "TXT", "udp") in upstream.queries
    assert ("big.upstream.test.", "TXT", "tcp") in upstream.queries
    # over UDP without EDNS the client gets TC and retries over TCP itself
    udp = dns.query.udp(
        dns.message.make_query("big.upstream.test.", "TXT", use_edns=False), server.host, port=server.port, timeout=10
    )
    assert udp.flags & dns.flags.TC


def test_unknown_reverse_names_fall_through_to_upstream(server, upstream):
    reply = ask(server, dns.reversename.from_address("192.0.2.77"), "PTR")
    assert reply.rcode() == dns.rcode.NXDOMAIN
    assert ("77.2.0.192.in-addr.arpa.", "PTR", "udp") in upstream.queries


def _samples(body: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == name
    }


def test_health_ready_and_metrics(server):
    assert server.get("health") == (200, "OK")
    assert server.get("ready") == (200, "OK")

    def kubernetes_answers() -> float:
        responses = _samples(server.get("metrics")[1], "coredns_dns_responses_total")
        return sum(v for labels, v in responses.items() if ("plugin", "kubernetes") in labels)

    before = kubernetes_answers()
    ask(server, "web.default.svc.cluster.local.", "A")
    ask(server, "missing.default.svc.cluster.local.", "A")
    assert kubernetes_answers() == before + 2
    for _ in range(2):
        ask(server, "www.example.test.", "A")  # forwarded, then a cache hit
    status, body = server.get("metrics")
    assert status == 200
    requests = _samples(body, "coredns_dns_requests_total")
    assert any(
        dict(labels).get("server") == f"dns://:{server.port}"
        and dict(labels)["type"] == "A"
        and dict(labels)["zone"] == "."
        for labels in requests
    )
    responses = _samples(body, "coredns_dns_responses_total")
    assert any(dict(labels)["rcode"] == "NXDOMAIN" for labels in responses)
    assert sum(_samples(body, "coredns_cache_hits_total").values()) >= 1
    assert any(dict(labels)["goversion"].startswith("python3.") for labels in _samples(body, "coredns_build_info"))
    assert _samples(body, "coredns_dns_request_duration_seconds_count")


def test_two_replicas_share_one_pod_address(server, upstream, api, tmp_path):
    """Two CoreDNS Pods on one lab node have one address: both bind its ports (SO_REUSEPORT, as CoreDNS)."""
    forward = forward_target(upstream, tmp_path)
    extra = f"       kubeconfig {api.kubeconfig()}\n"
    replica = start_dns(tmp_path, lambda port, http: kubeadm_corefile(port, http, forward, extra), same_as=server)
    try:
        # (its /ready may be answered by the first replica: wait for its own start-up lines)
        deadline = time.monotonic() + 60
        while "CoreDNS-1.12.0" not in replica.output() and replica.proc.poll() is None:
            assert time.monotonic() < deadline, replica.output()
            time.sleep(0.1)
        assert f".:{server.port}\n" in replica.output()
        for _ in range(20):
            assert texts(ask(server, "db.default.svc.cluster.local.", "A")) == ["10.0.0.7", "10.0.0.8"]
        assert replica.proc.poll() is None and server.proc.poll() is None
    finally:
        replica.stop()
