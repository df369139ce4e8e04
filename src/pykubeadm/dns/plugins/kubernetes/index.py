"""The records of one cluster zone, built from Service and EndpointSlice dicts per the Kubernetes DNS specification.

Pure functions, called by `kubernetes.plugin` after every watch event (and by unit tests with plain dicts).
`build_index` returns a `ZoneIndex`: RRsets by (owner name, type) plus the names that exist without records of
their own (empty non-terminals such as `ns.svc.cluster.local.`, so a query there is NODATA, not NXDOMAIN):

* ClusterIP Service: `svc.ns.svc.zone.` A/AAAA (every `clusterIPs` entry), `_port._proto.svc.ns.svc.zone.` SRV
  `0 100 port svc.ns.svc.zone.` per named port, and PTR from each ClusterIP;
* headless Service: A/AAAA of every ready endpoint address (or all, with `publishNotReadyAddresses`), and for each
  `hostname.svc.ns.svc.zone.` (the endpoint's hostname, else the Pod name with `endpoint_pod_names`, else the
  address with dashes, as CoreDNS does) an A/AAAA and a PTR; SRV per named port, one per endpoint;
* ExternalName Service: `svc.ns.svc.zone.` CNAME to the external name;
* `dns-version.zone.` TXT "1.1.0"; the apex SOA/NS; `ns.dns.zone.` A of the kube-dns Service.

Endpoints (core/v1) are turned into slice-shaped dicts by `slices_from_endpoints` when EndpointSlices are not served.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.reversename
import dns.rrset

__all__ = [
    "DNS_SCHEMA_VERSION",
    "IndexOptions",
    "ZoneIndex",
    "build_index",
    "endpoint_hostname",
    "slices_from_endpoints",
    "soa_rrset",
]

Obj = Mapping[str, Any]

#: The version of the Kubernetes DNS-Based Service Discovery specification served (`dns-version.<zone>` TXT).
DNS_SCHEMA_VERSION = "1.1.0"
#: The label tying an EndpointSlice to its Service.
SERVICE_NAME_LABEL = "kubernetes.io/service-name"

_IN = dns.rdataclass.IN
_A, _AAAA, _SRV, _PTR, _CNAME, _TXT, _SOA, _NS = (
    dns.rdatatype.A,
    dns.rdatatype.AAAA,
    dns.rdatatype.SRV,
    dns.rdatatype.PTR,
    dns.rdatatype.CNAME,
    dns.rdatatype.TXT,
    dns.rdatatype.SOA,
    dns.rdatatype.NS,
)


@dataclass(frozen=True)
class IndexOptions:
    """The kubernetes plugin's options that change which records exist."""

    ttl: int = 5
    namespaces: frozenset[str] = frozenset()  # empty: every namespace
    endpoint_pod_names: bool = False
    ignore_empty_service: bool = False
    noendpoints: bool = False


@dataclass
class ZoneIndex:
    """RRsets by (lower-case absolute owner name, rdtype); `names` holds every existing name (with or without data)."""

    zone: str
    serial: int
    ttl: int
    rrsets: dict[tuple[str, int], dns.rrset.RRset] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)

    def get(self, name: str, rdtype: int) -> dns.rrset.RRset | None:
        return self.rrsets.get((name, rdtype))

    def exists(self, name: str) -> bool:
        return name in self.names

    def _add(self, name: str, rdtype: dns.rdatatype.RdataType, text: str) -> None:
        key = (name, rdtype)
        rrset = self.rrsets.get(key)
        if rrset is None:
            rrset = self.rrsets[key] = dns.rrset.RRset(dns.name.from_text(name), _IN, rdtype)
            rrset.update_ttl(self.ttl)
        rrset.add(dns.rdata.from_text(_IN, rdtype, text), self.ttl)
        self._exist(name)

    def _exist(self, name: str) -> None:
        # the name and every ancestor up to the zone exist (reverse names are not marked: they fall through)
        if not name.endswith(self.zone):
            return
        while name not in self.names and len(name) >= len(self.zone):
            self.names.add(name)
            if name == self.zone:
                break
            name = name.split(".", 1)[1]


def soa_rrset(zone: str, serial: int, ttl: int) -> dns.rrset.RRset:
    """CoreDNS's SOA for a cluster zone: `ns.dns.<zone> hostmaster.<zone> serial 7200 1800 86400 <ttl>`."""
    text = f"ns.dns.{zone} hostmaster.{zone} {serial} 7200 1800 86400 {ttl}"
    return dns.rrset.from_text(zone, ttl, _IN, _SOA, text)


def endpoint_hostname(endpoint: Obj, address: str, pod_names: bool) -> str:
    """The label of an endpoint's own name: its hostname, else (endpoint_pod_names) its Pod's name, else the
    address with `.`/`:` replaced by `-` (CoreDNS's choice where the spec leaves it to the implementation)."""
    if endpoint.get("hostname"):
        return str(endpoint["hostname"])
    ref = endpoint.get("targetRef") or {}
    if pod_names and ref.get("kind", "Pod") == "Pod" and ref.get("name") and "." not in ref["name"]:
        return str(ref["name"])
    return address.replace(".", "-").replace(":", "-")


def _ready(endpoint: Obj) -> bool:
    ready = (endpoint.get("conditions") or {}).get("ready")
    return ready is None or bool(ready)


def _rdtype(address: str) -> dns.rdatatype.RdataType:
    return _AAAA if ":" in address else _A


def _ptr_name(address: str) -> str | None:
    try:
        return dns.reversename.from_address(str(ipaddress.ip_address(address))).to_text().lower()
    except ValueError:
        return None


def _absolute(name: str) -> str:
    return name if name.endswith(".") else name + "."


def _endpoint_addresses(slices: Iterable[Obj], publish_not_ready: bool) -> list[tuple[str, Obj]]:
    """(address, endpoint) of every usable endpoint across a Service's slices, each address once."""
    seen: dict[str, Obj] = {}
    for sl in slices:
        if sl.get("addressType", "IPv4") not in ("IPv4", "IPv6"):
            continue
        for ep in sl.get("endpoints") or []:
            if not publish_not_ready and not _ready(ep):
                continue
            for addr in ep.get("addresses") or []:
                seen.setdefault(addr, ep)
    return list(seen.items())


def _named_ports(ports: Iterable[Obj]) -> list[tuple[str, str, int]]:
    """(name, proto, port) of every named port, each (name, proto) once."""
    out: dict[tuple[str, str], int] = {}
    for p in ports:
        name, port = p.get("name"), p.get("port")
        if name and port:
            out.setdefault((str(name).lower(), str(p.get("protocol") or "TCP").lower()), int(port))
    return [(n, proto, port) for (n, proto), port in out.items()]


def _add_service(index: ZoneIndex, svc: Obj, slices: list[Obj], opts: IndexOptions) -> None:
    meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
    base = f"{meta['name']}.{meta['namespace']}.svc.{index.zone}".lower()
    kind = spec.get("type") or "ClusterIP"
    if kind == "ExternalName":
        if spec.get("externalName"):
            index._add(base, _CNAME, _absolute(str(spec["externalName"])))
        return
    publish = bool(spec.get("publishNotReadyAddresses"))
    endpoints = [] if opts.noendpoints else _endpoint_addresses(slices, publish)
    cluster_ips = [ip for ip in (spec.get("clusterIPs") or [spec.get("clusterIP")]) if ip and ip != "None"]
    if cluster_ips:
        if opts.ignore_empty_service and not _endpoint_addresses(slices, publish):
            return
        for ip in cluster_ips:
            index._add(base, _rdtype(ip), ip)
            ptr = _ptr_name(ip)
            if ptr:
                index._add(ptr, _PTR, base)
        for name, proto, port in _named_ports(spec.get("ports") or []):
            index._add(f"_{name}._{proto}.{base}", _SRV, f"0 100 {port} {base}")
        index._exist(base)
        return
    # headless: the endpoints themselves
    index._exist(base)
    ports = _named_ports(p for sl in slices for p in sl.get("ports") or [])
    weight = 100 // len(endpoints) if endpoints else 100
    for addr, ep in endpoints:
        host = f"{endpoint_hostname(ep, addr, opts.endpoint_pod_names)}.{base}".lower()
        index._add(base, _rdtype(addr), addr)
        index._add(host, _rdtype(addr), addr)
        ptr = _ptr_name(addr)
        if ptr:
            index._add(ptr, _PTR, host)
        for name, proto, port in ports:
            index._add(f"_{name}._{proto}.{base}", _SRV, f"0 {weight} {port} {host}")


def build_index(
    zone: str,
    services: Iterable[Obj],
    slices: Iterable[Obj],
    *,
    serial: int,
    options: IndexOptions | None = None,
) -> ZoneIndex:
    """Every record of `zone` (absolute, e.g. `cluster.local.`) for these Services and their EndpointSlices."""
    opts = options or IndexOptions()
    zone = _absolute(zone.lower())
    index = ZoneIndex(zone, serial, opts.ttl)
    by_service: dict[tuple[str, str], list[Obj]] = {}
    for sl in slices:
        meta = sl.get("metadata") or {}
        owner = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if owner:
            by_service.setdefault((str(meta.get("namespace")), str(owner)), []).append(sl)
    kube_dns_ips: list[str] = []
    for svc in services:
        meta = svc.get("metadata") or {}
        ns, name = str(meta.get("namespace")), str(meta.get("name"))
        if opts.namespaces and ns not in opts.namespaces:
            continue
        _add_service(index, svc, by_service.get((ns, name), []), opts)
        if (ns, name) == ("kube-system", "kube-dns"):
            spec = svc.get("spec") or {}
            kube_dns_ips = [ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and ip != "None"]
    index._add(f"dns-version.{zone}", _TXT, f'"{DNS_SCHEMA_VERSION}"')
    index.rrsets[(zone, _SOA)] = soa_rrset(zone, serial, opts.ttl)
    index._add(zone, _NS, f"ns.dns.{zone}")
    for ip in kube_dns_ips:
        index._add(f"ns.dns.{zone}", _rdtype(ip), ip)
    for label in ("svc", "pod"):
        index._exist(f"{label}.{zone}")
    return index


def slices_from_endpoints(endpoints: Iterable[Obj]) -> list[dict[str, Any]]:
    """core/v1 Endpoints → EndpointSlice-shaped dicts (one per subset), for API servers that serve no slices."""
    out: list[dict[str, Any]] = []
    for ep in endpoints:
        meta = ep.get("metadata") or {}
        for subset in ep.get("subsets") or []:
            eps: list[dict[str, Any]] = []
            for ready, key in ((True, "addresses"), (False, "notReadyAddresses")):
                for a in subset.get(key) or []:
                    e: dict[str, Any] = {"addresses": [a["ip"]], "conditions": {"ready": ready}}
                    if a.get("hostname"):
                        e["hostname"] = a["hostname"]
                    if a.get("targetRef"):
                        e["targetRef"] = a["targetRef"]
                    eps.append(e)
            out.append(
                {
                    "metadata": {
                        "namespace": meta.get("namespace"),
                        "name": meta.get("name"),
                        "labels": {SERVICE_NAME_LABEL: meta.get("name")},
                    },
                    "addressType": "IPv6" if eps and ":" in eps[0]["addresses"][0] else "IPv4",
                    "endpoints": eps,
                    "ports": subset.get("ports") or [],
                }
            )
    return out
