"""Cluster DNS records per the Kubernetes DNS specification, from Service / EndpointSlice / Endpoints dicts."""

from __future__ import annotations

import dns.message
import dns.rcode
import dns.rdatatype
import dns.reversename
import pytest

from pykubeadm.dns.corefile import parse_corefile
from pykubeadm.dns.plugin import Request, SetupContext
from pykubeadm.dns.plugins.kubernetes.index import IndexOptions, build_index, slices_from_endpoints
from pykubeadm.dns.plugins.kubernetes.lookup import lookup, pod_address
from pykubeadm.dns.plugins.kubernetes.plugin import setup

ZONE = "cluster.local."


def service(name, ns="default", *, cluster_ip="10.96.0.10", ports=(), kind="ClusterIP", external=None, **spec):
    body = {"type": kind, "ports": [dict(p) for p in ports], **spec}
    if kind == "ExternalName":
        body["externalName"] = external
    elif cluster_ip is not None:
        body["clusterIP"] = cluster_ip
        body["clusterIPs"] = spec.get("clusterIPs") or [cluster_ip]
    return {"metadata": {"name": name, "namespace": ns}, "spec": body}


def endpoint_slice(svc, ns="default", *, endpoints, ports=(), name=None, address_type="IPv4"):
    return {
        "metadata": {"name": name or f"{svc}-abcde", "namespace": ns, "labels": {"kubernetes.io/service-name": svc}},
        "addressType": address_type,
        "endpoints": endpoints,
        "ports": [dict(p) for p in ports],
    }


def ep(ip, *, ready=True, hostname=None, pod=None):
    out = {"addresses": [ip], "conditions": {"ready": ready}}
    if hostname:
        out["hostname"] = hostname
    if pod:
        out["targetRef"] = {"kind": "Pod", "name": pod, "namespace": "default"}
    return out


SERVICES = [
    service("web", cluster_ip="10.96.0.20", ports=[{"name": "http", "port": 80, "protocol": "TCP"}, {"port": 81}]),
    service("dual", cluster_ip="10.96.0.21", clusterIPs=["10.96.0.21", "fd00::21"]),
    service("db", cluster_ip="None", ports=[{"name": "pg", "port": 5432}]),
    service("ext", kind="ExternalName", external="example.org"),
    service("kube-dns", ns="kube-system", cluster_ip="10.96.0.10"),
]
SLICES = [
    endpoint_slice("web", endpoints=[ep("10.0.0.5")], ports=[{"name": "http", "port": 8080, "protocol": "TCP"}]),
    endpoint_slice(
        "db",
        endpoints=[ep("10.0.0.7", hostname="db-0"), ep("10.0.0.8"), ep("10.0.0.9", ready=False)],
        ports=[{"name": "pg", "port": 5432, "protocol": "TCP"}],
    ),
]


@pytest.fixture()
def index():
    return build_index(ZONE, SERVICES, SLICES, serial=1700000000, options=IndexOptions(ttl=30))


def texts(rrsets):
    return sorted(rd.to_text() for r in rrsets for rd in r)


def test_cluster_ip_service_a_and_aaaa(index):
    ans = lookup(index, "web.default.svc.cluster.local.", dns.rdatatype.A)
    assert ans.rcode == dns.rcode.NOERROR and texts(ans.answer) == ["10.96.0.20"]
    assert ans.answer[0].ttl == 30
    assert texts(lookup(index, "dual.default.svc.cluster.local.", dns.rdatatype.AAAA).answer) == ["fd00::21"]
    # an IPv4-only Service has no AAAA: NODATA with the SOA, not NXDOMAIN
    nodata = lookup(index, "web.default.svc.cluster.local.", dns.rdatatype.AAAA)
    assert nodata.rcode == dns.rcode.NOERROR and not nodata.answer
    assert nodata.authority[0].rdtype == dns.rdatatype.SOA


def test_headless_service_returns_ready_endpoints_and_their_names(index):
    ans = lookup(index, "db.default.svc.cluster.local.", dns.rdatatype.A)
    assert texts(ans.answer) == ["10.0.0.7", "10.0.0.8"]  # the unready 10.0.0.9 is left out
    assert texts(lookup(index, "db-0.db.default.svc.cluster.local.", dns.rdatatype.A).answer) == ["10.0.0.7"]
    assert texts(lookup(index, "10-0-0-8.db.default.svc.cluster.local.", dns.rdatatype.A).answer) == ["10.0.0.8"]


def test_publish_not_ready_addresses_includes_unready_endpoints():
    svc = service("db", cluster_ip="None", publishNotReadyAddresses=True)
    idx = build_index(ZONE, [svc], SLICES, serial=1)
    assert texts(lookup(idx, "db.default.svc.cluster.local.", dns.rdatatype.A).answer) == [
        "10.0.0.7",
        "10.0.0.8",
        "10.0.0.9",
    ]


def test_srv_for_named_ports(index):
    ans = lookup(index, "_http._tcp.web.default.svc.cluster.local.", dns.rdatatype.SRV)
    assert texts(ans.answer) == ["0 100 80 web.default.svc.cluster.local."]
    assert texts(ans.additional) == ["10.96.0.20"]
    headless = lookup(index, "_pg._tcp.db.default.svc.cluster.local.", dns.rdatatype.SRV)
    assert texts(headless.answer) == [
        "0 50 5432 10-0-0-8.db.default.svc.cluster.local.",
        "0 50 5432 db-0.db.default.svc.cluster.local.",
    ]
    assert texts(headless.additional) == ["10.0.0.7", "10.0.0.8"]
    # an unnamed port has no SRV record; the protocol label must match
    assert lookup(index, "_pg._udp.db.default.svc.cluster.local.", dns.rdatatype.SRV).rcode == dns.rcode.NXDOMAIN


def test_ptr_for_cluster_ips_and_endpoints(index):
    def ptr(ip):
        name = dns.reversename.from_address(ip).to_text()
        return texts([r]) if (r := index.get(name, dns.rdatatype.PTR)) else []

    assert ptr("10.96.0.20") == ["web.default.svc.cluster.local."]
    assert ptr("fd00::21") == ["dual.default.svc.cluster.local."]
    assert ptr("10.0.0.7") == ["db-0.db.default.svc.cluster.local."]
    assert ptr("10.0.0.8") == ["10-0-0-8.db.default.svc.cluster.local."]
    assert ptr("10.0.0.9") == []


def test_external_name_is_a_cname_for_any_type(index):
    for qtype in (dns.rdatatype.A, dns.rdatatype.AAAA, dns.rdatatype.CNAME):
        ans = lookup(index, "ext.default.svc.cluster.local.", qtype)
        assert texts(ans.answer) == ["example.org."]
        assert ans.answer[0].rdtype == dns.rdatatype.CNAME


def test_pod_records_in_insecure_mode(index):
    ans = lookup(index, "10-244-1-5.default.pod.cluster.local.", dns.rdatatype.A, pods="insecure")
    assert texts(ans.answer) == ["10.244.1.5"]
    v6 = lookup(index, "fd00--5.default.pod.cluster.local.", dns.rdatatype.AAAA, pods="insecure")
    assert texts(v6.answer) == ["fd00::5"]
    assert lookup(index, "10-244-1-5.default.pod.cluster.local.", dns.rdatatype.A).rcode == dns.rcode.NXDOMAIN
    assert lookup(index, "nope.default.pod.cluster.local.", dns.rdatatype.A, pods="insecure").rcode == 3
    assert pod_address("1-2-3-4") == "1.2.3.4" and pod_address("a-b") is None


def test_missing_name_is_nxdomain_with_coredns_soa(index):
    ans = lookup(index, "missing.default.svc.cluster.local.", dns.rdatatype.A)
    assert ans.rcode == dns.rcode.NXDOMAIN and not ans.answer
    (soa,) = ans.authority
    assert soa.to_text() == (
        "cluster.local. 30 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1700000000 7200 1800 86400 30"
    )


def test_namespace_and_svc_labels_exist_without_records(index):
    for name in ("default.svc.cluster.local.", "svc.cluster.local.", "pod.cluster.local.", "cluster.local."):
        ans = lookup(index, name, dns.rdatatype.A)
        assert ans.rcode == dns.rcode.NOERROR and not ans.answer, name


def test_dns_version_txt_and_apex(index):
    assert texts(lookup(index, "dns-version.cluster.local.", dns.rdatatype.TXT).answer) == ['"1.1.0"']
    assert texts(lookup(index, "cluster.local.", dns.rdatatype.NS).answer) == ["ns.dns.cluster.local."]
    assert texts(lookup(index, "ns.dns.cluster.local.", dns.rdatatype.A).answer) == ["10.96.0.10"]


def test_endpoints_fallback_matches_slices():
    endpoints = [
        {
            "metadata": {"name": "db", "namespace": "default"},
            "subsets": [
                {
                    "addresses": [{"ip": "10.0.0.7", "hostname": "db-0"}, {"ip": "10.0.0.8"}],
                    "notReadyAddresses": [{"ip": "10.0.0.9"}],
                    "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}],
                }
            ],
        }
    ]
    idx = build_index(ZONE, SERVICES, slices_from_endpoints(endpoints), serial=1)
    assert texts(lookup(idx, "db.default.svc.cluster.local.", dns.rdatatype.A).answer) == ["10.0.0.7", "10.0.0.8"]
    assert texts(lookup(idx, "db-0.db.default.svc.cluster.local.", dns.rdatatype.A).answer) == ["10.0.0.7"]


def test_options_namespaces_and_ignore_empty_service():
    opts = IndexOptions(namespaces=frozenset({"kube-system"}))
    idx = build_index(ZONE, SERVICES, SLICES, serial=1, options=opts)
    assert lookup(idx, "web.default.svc.cluster.local.", dns.rdatatype.A).rcode == dns.rcode.NXDOMAIN
    empty = build_index(ZONE, SERVICES, SLICES, serial=1, options=IndexOptions(ignore_empty_service=True))
    assert lookup(empty, "dual.default.svc.cluster.local.", dns.rdatatype.A).rcode == dns.rcode.NXDOMAIN
    assert lookup(empty, "web.default.svc.cluster.local.", dns.rdatatype.A).answer


# --- the plugin's replies (messages), with kubeadm's kubernetes block ---------------------------------------------


def _plugin():
    text = ".:53 {\n kubernetes cluster.local in-addr.arpa ip6.arpa {\n pods insecure\n"
    text += " fallthrough in-addr.arpa ip6.arpa\n ttl 30\n }\n}\n"
    d = parse_corefile(text)[0].directives[0]
    plugin = setup(d, SetupContext("Corefile", ["."], "dns://:53", 53, env={}))
    plugin.load(SERVICES, SLICES)
    return plugin


async def _ask(plugin, name, qtype):
    msg = dns.message.make_query(name, qtype)
    q = msg.question[0]
    req = Request(msg, ("127.0.0.1", 1), "udp", "dns://:53", ".", q.name, q.rdtype, q.rdclass)

    async def next_(_req):
        reply = dns.message.make_response(msg)
        reply.set_rcode(dns.rcode.REFUSED)  # marks "fell through"
        return reply

    return await plugin.serve(req, next_)


async def test_plugin_replies_are_authoritative_messages():
    plugin = _plugin()
    reply = await _ask(plugin, "web.default.svc.cluster.local.", "A")
    assert reply.rcode() == dns.rcode.NOERROR and reply.flags & dns.flags.AA
    assert texts(reply.answer) == ["10.96.0.20"]
    nx = await _ask(plugin, "nope.default.svc.cluster.local.", "A")
    assert nx.rcode() == dns.rcode.NXDOMAIN and nx.authority[0].rdtype == dns.rdatatype.SOA
    ptr = await _ask(plugin, dns.reversename.from_address("10.96.0.20"), "PTR")
    assert texts(ptr.answer) == ["web.default.svc.cluster.local."]


async def test_plugin_falls_through_for_unknown_reverse_names_and_other_zones():
    plugin = _plugin()
    assert (await _ask(plugin, dns.reversename.from_address("192.0.2.1"), "PTR")).rcode() == dns.rcode.REFUSED
    assert (await _ask(plugin, "example.org.", "A")).rcode() == dns.rcode.REFUSED


def test_pod_records_in_verified_mode_need_a_pod_with_that_ip(index):
    name = "10-244-1-5.default.pod.cluster.local."
    known = {("default", "10.244.1.5")}
    assert texts(lookup(index, name, dns.rdatatype.A, pods="verified", pod_ips=known).answer) == ["10.244.1.5"]
    assert lookup(index, name, dns.rdatatype.A, pods="verified", pod_ips=set()).rcode == dns.rcode.NXDOMAIN
    other_ns = "10-244-1-5.kube-system.pod.cluster.local."
    assert lookup(index, other_ns, dns.rdatatype.A, pods="verified", pod_ips=known).rcode == dns.rcode.NXDOMAIN


async def test_plugin_answers_servfail_until_synced():
    text = ".:53 {\n kubernetes cluster.local in-addr.arpa ip6.arpa\n}\n"
    d = parse_corefile(text)[0].directives[0]
    plugin = setup(d, SetupContext("Corefile", ["."], "dns://:53", 53, env={}))
    assert not plugin.ready()
    assert (await _ask(plugin, "web.default.svc.cluster.local.", "A")).rcode() == dns.rcode.SERVFAIL
    plugin.load(SERVICES, SLICES)
    assert plugin.ready()
    assert (await _ask(plugin, "web.default.svc.cluster.local.", "A")).rcode() == dns.rcode.NOERROR
