"""The ruleset kube-proxy's nftables mode hands to `nft -f -` (pure: no I/O; the unit tests read its text).

Used by `proxy.nftables.NftablesProxier`. Everything lives in kube-proxy's own table, `ip kube-proxy` (and
`ip6 kube-proxy`). The layout follows kube-proxy's nftables proxier: base chains `filter-*` / `nat-*` hooked at
dstnat-10 / dstnat / srcnat; `services` dispatching through the verdict maps `service-ips` (ClusterIP and external IP
. protocol . port) and `service-nodeports` (protocol . port, for the addresses in `nodeport-ips`); per service port a
`service-<HASH>-ns/name/proto/port` chain (`local-…` for Local traffic policy, `external-…` for NodePort traffic)
picking an endpoint with `numgen random mod N` (after the per-endpoint `affinity-…` sets for ClientIP affinity); per
endpoint an `endpoint-…` chain that DNATs; `no-endpoint-services` / `no-endpoint-nodeports` reject (no endpoints at
all) or drop (none for a Local policy); masquerading by the mark bit (`mark-for-masquerade`, `masquerading`).

Each service port's part of the table is a `Fragment` (its chains and rules, map elements, affinity sets). A sync is
one transaction: the first rebuilds the table (`delete table` + everything), a full resync flushes the maps and
rewrites every fragment, and an ordinary sync writes only the fragments that changed since the previous one (their
old map elements deleted, chains flushed and refilled, new elements added), as kube-proxy's partial syncs do. Chains
that are no longer used are flushed and left for the caller to delete later (a map element must be gone first).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from pykubeadm.proxy.servicemap import Endpoint, ProxyTable, ServicePort, ServicePortName, categorize

__all__ = ["KUBE_PROXY_TABLE", "Fragment", "Ruleset", "build_ruleset"]

KUBE_PROXY_TABLE = "kube-proxy"
#: nft's maximum object name length (NFT_NAME_MAXLEN - 1).
_NAME_MAX = 256
_BASE_MAX = _NAME_MAX - 16

_BASE_CHAINS = (
    # numeric priorities: dstnat - 10, dstnat, srcnat (older nft accepts "dstnat" only on prerouting)
    ("filter-prerouting", "filter", "prerouting", "-110"),
    ("filter-input", "filter", "input", "-110"),
    ("filter-forward", "filter", "forward", "-110"),
    ("filter-output", "filter", "output", "-110"),
    ("nat-prerouting", "nat", "prerouting", "-100"),
    ("nat-output", "nat", "output", "-100"),
    ("nat-postrouting", "nat", "postrouting", "100"),
)
_JUMPS = (
    ("endpoints-check", "filter-input", "ct state new "),
    ("endpoints-check", "filter-forward", "ct state new "),
    ("endpoints-check", "filter-output", "ct state new "),
    ("firewall-check", "filter-prerouting", "ct state new "),
    ("firewall-check", "filter-output", "ct state new "),
    ("services", "nat-output", ""),
    ("services", "nat-prerouting", ""),
    ("masquerading", "nat-postrouting", ""),
)
_MAPS = ("firewall-ips", "no-endpoint-services", "no-endpoint-nodeports", "service-ips", "service-nodeports")
_MAP_COMMENTS = {
    "no-endpoint-services": "vmap to drop or reject packets to services with no endpoints",
    "no-endpoint-nodeports": "vmap to drop or reject packets to service nodeports with no endpoints",
    "firewall-ips": "destinations that are subject to LoadBalancerSourceRanges",
    "service-ips": "ClusterIP, ExternalIP and LoadBalancer IP traffic",
    "service-nodeports": "NodePort traffic",
}


def _hash_and_truncate(name: str) -> str:
    digest = base64.b32encode(hashlib.sha256(name.encode()).digest()).decode()
    name = f"{digest[:8]}-{name}"
    return name if len(name) <= _BASE_MAX else name[: _BASE_MAX - 3] + "..."


def _port_base(sp: ServicePort) -> str:
    return _hash_and_truncate(f"{sp.name.namespace}/{sp.name.name}/{sp.protocol.lower()}/{sp.name.port}")


def _endpoint_base(sp: ServicePort, ep: Endpoint) -> str:
    ip = ep.ip.replace(":", ".")
    return _hash_and_truncate(
        f"{sp.name.namespace}/{sp.name.name}/{sp.protocol.lower()}/{sp.name.port}__{ip}/{ep.port}"
    )


def _family(ip: str) -> int:
    return 6 if ":" in ip else 4


def _is_loopback(ip: str) -> bool:
    return ip.startswith("127.") or ip == "::1"


@dataclass
class Fragment:
    """One service port's objects: chains (in creation order) with their rules, map elements, affinity sets."""

    chains: dict[str, list[str]] = field(default_factory=dict)
    elements: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # (map, key) → (value, comment)
    sets: dict[str, str] = field(default_factory=dict)  # name → declaration

    def chain(self, name: str) -> None:
        self.chains.setdefault(name, [])

    def rule(self, chain: str, rule: str, comment: str = "") -> None:
        self.chains[chain].append(rule + (f' comment "{comment}"' if comment else ""))

    def element(self, obj: str, key: str, value: str = "", comment: str = "") -> None:
        self.elements[(obj, key)] = (value, comment)

    def affinity_set(self, name: str, spec: str) -> None:
        self.sets[name] = spec


@dataclass
class Ruleset:
    """One transaction's text and every service port's fragment it leaves in the table."""

    text: str
    fragments: dict[ServicePortName, Fragment] = field(default_factory=dict)

    @property
    def chains(self) -> set[str]:
        return {c for f in self.fragments.values() for c in f.chains}

    @property
    def affinity_sets(self) -> set[str]:
        return {s for f in self.fragments.values() for s in f.sets}


class _Tx:
    def __init__(self, family: str):
        self.prefix = f"{family} {KUBE_PROXY_TABLE}"
        self.lines: list[str] = []

    def add(self, line: str) -> None:
        self.lines.append(line)

    def chain(self, name: str, spec: str = "") -> None:
        self.add(f"add chain {self.prefix} {name}" + (f" {{ {spec} ; }}" if spec else ""))
        self.add(f"flush chain {self.prefix} {name}")

    def rule(self, chain: str, rule: str, comment: str = "") -> None:
        self.add(f"add rule {self.prefix} {chain} {rule}" + (f' comment "{comment}"' if comment else ""))

    def element(self, obj: str, key: str, value: str = "", comment: str = "") -> None:
        body = key + (f' comment "{comment}"' if comment else "") + (f" : {value}" if value else "")
        self.add(f"add element {self.prefix} {obj} {{ {body} }}")

    def delete_element(self, obj: str, key: str) -> None:
        self.add(f"delete element {self.prefix} {obj} {{ {key} }}")

    def write(self, frag: Fragment, elements: bool = True) -> None:
        """Create the fragment's sets and chains, then the rules (which may refer to any of them), then elements."""
        for name, spec in frag.sets.items():
            self.add(f"add set {self.prefix} {name} {{ {spec} ; }}")
        for name in frag.chains:
            self.chain(name)
        for name, rules in frag.chains.items():
            for rule in rules:
                self.add(f"add rule {self.prefix} {name} {rule}")
        if elements:
            for (obj, key), (value, comment) in frag.elements.items():
                self.element(obj, key, value, comment)


def _base(tx: _Tx, family: int, node_ips: Sequence[str], masquerade_bit: int) -> None:
    """The table's fixed part: base chains, jumps, masquerading, nodeport-ips, the (flushed) maps, dispatch rules."""
    ipx, addr_type = ("ip", "ipv4_addr") if family == 4 else ("ip6", "ipv6_addr")
    mark = f"{1 << masquerade_bit:#010x}"
    p = tx.prefix
    for name, kind, hook, prio in _BASE_CHAINS:
        tx.chain(name, f"type {kind} hook {hook} priority {prio}")
    made: set[str] = set()
    for dst, src, extra in _JUMPS:
        if dst not in made:
            tx.chain(dst)
            made.add(dst)
        tx.rule(src, f"{extra}jump {dst}")
    tx.chain("mark-for-masquerade")
    tx.rule("mark-for-masquerade", f"mark set mark or {mark}")
    tx.rule("masquerading", f"mark and {mark} == 0 return")
    tx.rule("masquerading", f"mark set mark xor {mark}")
    tx.rule("masquerading", "masquerade fully-random")
    # NodePorts are matched through @nodeport-ips only (kube's "primary" nodePortAddresses); never on loopback
    tx.add(f'add set {p} nodeport-ips {{ type {addr_type} ; comment "IPs that accept NodePort traffic" ; }}')
    tx.add(f"flush set {p} nodeport-ips")
    for ip in node_ips:
        if _family(ip) == family and not _is_loopback(ip):
            tx.element("nodeport-ips", ip)
    for name in _MAPS:
        key_type = (
            "inet_proto . inet_service" if name.endswith("nodeports") else f"{addr_type} . inet_proto . inet_service"
        )
        tx.add(f'add map {p} {name} {{ type {key_type} : verdict ; comment "{_MAP_COMMENTS[name]}" ; }}')
        tx.add(f"flush map {p} {name}")
    tx.add(f'add chain {p} reject-chain {{ comment "helper for @no-endpoint-services / @no-endpoint-nodeports" ; }}')
    tx.add(f"flush chain {p} reject-chain")
    tx.rule("reject-chain", "reject")
    tx.rule("endpoints-check", f"{ipx} daddr . meta l4proto . th dport vmap @no-endpoint-services")
    tx.rule("endpoints-check", f"{ipx} daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports")
    tx.rule("firewall-check", f"{ipx} daddr . meta l4proto . th dport vmap @firewall-ips")
    tx.rule("services", f"{ipx} daddr . meta l4proto . th dport vmap @service-ips")
    tx.rule("services", f"{ipx} daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports")


def fragments(
    table: ProxyTable,
    *,
    family: int,
    node_name: str,
    masquerade_all: bool = False,
    cluster_cidrs: Sequence[str] = (),
) -> dict[ServicePortName, Fragment]:
    """Every service port's fragment for one IP family."""
    ipx, addr_type = ("ip", "ipv4_addr") if family == 4 else ("ip6", "ipv6_addr")
    out: dict[ServicePortName, Fragment] = {}
    for name in sorted(table.ports):
        sp = table.ports[name]
        if sp.protocol not in ("TCP", "UDP", "SCTP"):
            continue
        cluster_ips = [ip for ip in sp.cluster_ips if _family(ip) == family]
        if not cluster_ips:
            continue
        frag = Fragment()
        _service_rules(
            frag,
            sp,
            table.endpoints.get(name, []),
            node_name,
            family,
            ipx,
            addr_type,
            masquerade_all,
            cluster_cidrs,
            cluster_ips,
        )
        out[name] = frag
    return out


def build_ruleset(
    table: ProxyTable,
    *,
    family: int,
    node_name: str,
    node_ips: Sequence[str],
    masquerade_bit: int = 14,
    masquerade_all: bool = False,
    cluster_cidrs: Sequence[str] = (),
    previous: Ruleset | None = None,
    full: bool = False,
    stale_chains: Sequence[str] = (),
) -> Ruleset:
    """The `nft -f -` text of one sync for one IP family: a rebuild without `previous`, else a full or partial sync."""
    tx = _Tx("ip" if family == 4 else "ip6")
    p = tx.prefix
    new = fragments(
        table, family=family, node_name=node_name, masquerade_all=masquerade_all, cluster_cidrs=cluster_cidrs
    )
    tx.add(f'add table {p} {{ comment "rules for kube-proxy" ; }}')
    if previous is None:
        tx.add(f"delete table {p}")
        tx.add(f'add table {p} {{ comment "rules for kube-proxy" ; }}')
    for name in stale_chains:
        if not any(name in f.chains for f in new.values()):
            tx.add(f"delete chain {p} {name}")
    old = previous.fragments if previous is not None else {}
    if previous is None or full:
        _base(tx, family, node_ips, masquerade_bit)
        for frag in new.values():
            tx.write(frag)
        changed = set(old) | set(new)
    else:
        changed = {n for n in set(old) | set(new) if old.get(n) != new.get(n)}
        for n in sorted(changed):
            before, after = old.get(n), new.get(n)
            if before is None:
                continue
            for (obj, key), entry in before.elements.items():
                if after is None or after.elements.get((obj, key)) != entry:
                    tx.delete_element(obj, key)
        for n in sorted(changed):
            after = new.get(n)
            if after is not None:
                tx.write(after, elements=False)
        for n in sorted(changed):
            before, after = old.get(n), new.get(n)
            if after is None:
                continue
            for (obj, key), (value, comment) in after.elements.items():
                if before is None or before.elements.get((obj, key)) != (value, comment):
                    tx.element(obj, key, value, comment)
    live_chains = {c for f in new.values() for c in f.chains}
    live_sets = {s for f in new.values() for s in f.sets}
    for n in sorted(changed):
        before = old.get(n)
        if before is None:
            continue
        for chain in before.chains:
            if chain not in live_chains:
                tx.add(f"flush chain {p} {chain}")
        for s in before.sets:
            if s not in live_sets:
                tx.add(f"delete set {p} {s}")
    return Ruleset(text="\n".join(tx.lines) + "\n", fragments=new)


def _service_rules(
    tx: Fragment,
    sp: ServicePort,
    endpoints: list[Endpoint],
    node_name: str,
    family: int,
    ipx: str,
    addr_type: str,
    masquerade_all: bool,
    cluster_cidrs: Sequence[str],
    cluster_ips: list[str],
) -> None:
    proto = sp.protocol.lower()
    label = str(sp.name)
    base = _port_base(sp)
    cluster_chain, local_chain, ext_chain = f"service-{base}", f"local-{base}", f"external-{base}"
    cat = categorize(sp, endpoints, node_name, family)
    ep_chain = {ep: f"endpoint-{_endpoint_base(sp, ep)}" for ep in cat.reachable}
    for chain in ep_chain.values():
        tx.chain(chain)
    uses_cluster = bool(cat.cluster) and sp.uses_cluster_endpoints
    uses_local = bool(cat.local) and sp.uses_local_endpoints
    for used, chain in ((uses_cluster, cluster_chain), (uses_local, local_chain)):
        if used:
            tx.chain(chain)
    internal_chain = local_chain if sp.internal_local else cluster_chain
    has_internal = cat.has_any and (bool(cat.local) if sp.internal_local else True)
    has_external = cat.has_any and (bool(cat.local) if sp.external_local else True)
    uses_ext = cat.has_any and sp.externally_accessible
    if uses_ext:
        tx.chain(ext_chain)
    internal_verdict = "goto reject-chain" if not cat.has_any else ("drop" if not has_internal else "")
    external_verdict = "goto reject-chain" if not cat.has_any else ("drop" if not has_external else "")
    local_cidrs = [c for c in cluster_cidrs if _family(c.split("/")[0]) == family]

    for ip in cluster_ips:
        key = f"{ip} . {proto} . {sp.port}"
        if has_internal:
            tx.element("service-ips", key, f"goto {internal_chain}")
            if masquerade_all:
                tx.rule(internal_chain, f"{ipx} daddr {ip} {proto} dport {sp.port} jump mark-for-masquerade")
            elif local_cidrs:
                tx.rule(
                    internal_chain,
                    f"{ipx} daddr {ip} {proto} dport {sp.port} {ipx} saddr != {{ {', '.join(local_cidrs)} }} jump mark-for-masquerade",
                )
        else:
            tx.element("no-endpoint-services", key, internal_verdict, label)
    for ip in sp.external_ips:
        if _family(ip) != family:
            continue
        key = f"{ip} . {proto} . {sp.port}"
        if cat.has_any:
            tx.element("service-ips", key, f"goto {ext_chain}")
        if not has_external:
            tx.element("no-endpoint-services", key, external_verdict, label)
    if sp.node_port:
        key = f"{proto} . {sp.node_port}"
        if cat.has_any:
            tx.element("service-nodeports", key, f"goto {ext_chain}")
        if not has_external:
            tx.element("no-endpoint-nodeports", key, external_verdict, label)
    if uses_ext:
        if not sp.external_local:
            tx.rule(ext_chain, "jump mark-for-masquerade")
        else:
            # pod and host traffic to an external destination is not subject to the Local policy (kube's short-circuit)
            short = cluster_chain if uses_cluster else (local_chain if uses_local else "")
            if short and local_cidrs:
                tx.rule(
                    ext_chain, f"{ipx} saddr {{ {', '.join(local_cidrs)} }} goto {short}", "short-circuit pod traffic"
                )
            if short:
                tx.rule(ext_chain, "fib saddr type local jump mark-for-masquerade", "masquerade local traffic")
                tx.rule(ext_chain, f"fib saddr type local goto {short}", "short-circuit local traffic")
        if has_external:
            tx.rule(ext_chain, f"goto {local_chain if sp.external_local else cluster_chain}")
    if sp.session_affinity:
        for chain in ep_chain.values():
            aff = "affinity-" + chain[len("endpoint-") :]
            tx.affinity_set(aff, f"type {addr_type} ; flags dynamic,timeout ; timeout {sp.affinity_timeout}s")
    for used, chain, eps in ((uses_cluster, cluster_chain, cat.cluster), (uses_local, local_chain, cat.local)):
        if not used:
            continue
        if sp.session_affinity:
            for ep in eps:
                aff = "affinity-" + ep_chain[ep][len("endpoint-") :]
                tx.rule(chain, f"{ipx} saddr @{aff} goto {ep_chain[ep]}")
        choices = " , ".join(f"{i} : goto {ep_chain[ep]}" for i, ep in enumerate(eps))
        tx.rule(chain, f"numgen random mod {len(eps)} vmap {{ {choices} }}")
    for ep, chain in ep_chain.items():
        tx.rule(chain, f"{ipx} saddr {ep.ip} jump mark-for-masquerade")
        if sp.session_affinity:
            tx.rule(chain, f"update @affinity-{chain[len('endpoint-') :]} {{ {ipx} saddr }}")
        tx.rule(chain, f"meta l4proto {proto} dnat to {ep}")
