"""Answering one question from a `ZoneIndex`: the records, NODATA or NXDOMAIN with the zone's SOA, pod records.

Pure; called by `kubernetes.plugin` for every query in its zones and by the unit tests. `pods insecure` answers
`a-b-c-d.ns.pod.<zone>` with the address written in the name (IPv6: `-` for `:`) without checking a Pod exists;
`pods verified` answers only when a Pod of that namespace has that IP (`pod_ips`, from the plugin's Pod watch);
`pods disabled` makes every pod name NXDOMAIN. A CNAME (ExternalName) answers a query of any other type.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Container
from dataclasses import dataclass, field

import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from pykubeadm.dns.plugins.kubernetes.index import ZoneIndex, soa_rrset

__all__ = ["Answer", "lookup", "lookup_reverse", "pod_address"]

_A, _AAAA, _SRV, _CNAME, _ANY = (
    dns.rdatatype.A,
    dns.rdatatype.AAAA,
    dns.rdatatype.SRV,
    dns.rdatatype.CNAME,
    dns.rdatatype.ANY,
)
_ANY_TYPES = (dns.rdatatype.A, dns.rdatatype.AAAA, dns.rdatatype.SRV, dns.rdatatype.TXT, dns.rdatatype.PTR)


@dataclass
class Answer:
    rcode: int
    answer: list[dns.rrset.RRset] = field(default_factory=list)
    authority: list[dns.rrset.RRset] = field(default_factory=list)
    additional: list[dns.rrset.RRset] = field(default_factory=list)
    #: The ExternalName target to resolve further (the plugin asks the rest of the server), if any.
    cname_target: dns.name.Name | None = None


def pod_address(label: str) -> str | None:
    """`10-0-0-1` → 10.0.0.1, `fd00--1` → fd00::1; None if the label is not an address written with dashes."""
    for text in (label.replace("-", "."), label.replace("-", ":")):
        try:
            return str(ipaddress.ip_address(text))
        except ValueError:
            continue
    return None


def _negative(index: ZoneIndex, rcode: int) -> Answer:
    return Answer(
        rcode, authority=[index.get(index.zone, dns.rdatatype.SOA) or soa_rrset(index.zone, index.serial, index.ttl)]
    )


def _pod(
    index: ZoneIndex, name: str, labels: list[str], qtype: int, pods: str, pod_ips: Container[tuple[str, str]]
) -> Answer:
    addr = pod_address(labels[0]) if pods != "disabled" else None
    if addr is None or (pods == "verified" and (labels[1], addr) not in pod_ips):
        return _negative(index, dns.rcode.NXDOMAIN)
    rdtype = dns.rdatatype.AAAA if ":" in addr else dns.rdatatype.A
    if qtype not in (rdtype, _ANY):
        return _negative(index, dns.rcode.NOERROR)
    return Answer(dns.rcode.NOERROR, answer=[dns.rrset.from_text(name, index.ttl, dns.rdataclass.IN, rdtype, addr)])


def _additional(index: ZoneIndex, srv: dns.rrset.RRset) -> list[dns.rrset.RRset]:
    out = []
    for rd in srv:
        target = rd.target.to_text().lower()
        for rdtype in (_A, _AAAA):
            rrset = index.get(target, rdtype)
            if rrset is not None and rrset not in out:
                out.append(rrset)
    return out


def lookup(
    index: ZoneIndex, name: str, qtype: int, *, pods: str = "disabled", pod_ips: Container[tuple[str, str]] = ()
) -> Answer:
    """The answer for `name` (lower case, absolute, inside `index.zone`) and `qtype`."""
    labels = name[: -len(index.zone)].rstrip(".").split(".") if name != index.zone else []
    if len(labels) == 3 and labels[2] == "pod":
        return _pod(index, name, labels, qtype, pods, pod_ips)
    if qtype == _ANY:
        found = [r for t in _ANY_TYPES if (r := index.get(name, t)) is not None]
        if found:
            return Answer(dns.rcode.NOERROR, answer=found)
    rrset = index.get(name, qtype)
    if rrset is not None:
        ans = Answer(dns.rcode.NOERROR, answer=[rrset])
        if qtype == _SRV:
            ans.additional = _additional(index, rrset)
        return ans
    cname = index.get(name, _CNAME)
    if cname is not None:
        return Answer(dns.rcode.NOERROR, answer=[cname], cname_target=next(iter(cname)).target)
    return _negative(index, dns.rcode.NOERROR if index.exists(name) else dns.rcode.NXDOMAIN)


def lookup_reverse(index: ZoneIndex, name: str) -> dns.rrset.RRset | None:
    """The PTR for a reverse name (`1.0.96.10.in-addr.arpa.`), if a ClusterIP or endpoint has that address."""
    return index.get(name, dns.rdatatype.PTR)
