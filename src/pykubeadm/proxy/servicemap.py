"""What kube-proxy proxies: Services and EndpointSlices (as JSON dicts) turned into service ports and their endpoints.

Used by both proxiers through `build_table`. A `ServicePort` is one port of one Service with a ClusterIP (headless and
ExternalName Services are left alone); its endpoints come from every EndpointSlice labelled
`kubernetes.io/service-name` with a port of the same name and protocol (an endpoint is keyed by IP and port; the first
address of each endpoint counts, as in kube-proxy). `categorize` is kube-proxy's CategorizeEndpoints: ready endpoints
only (not-ready ones never get traffic), falling back to serving-and-terminating ones when none is ready;
`internalTrafficPolicy: Local` / `externalTrafficPolicy: Local` use the endpoints whose `nodeName` is this node.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "SERVICE_NAME_LABEL",
    "Endpoint",
    "ProxyTable",
    "ServicePort",
    "ServicePortName",
    "build_table",
    "categorize",
    "endpoints_by_port",
    "service_ports",
]

#: The label linking an EndpointSlice to its Service.
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
#: Service.spec.sessionAffinityConfig.clientIP.timeoutSeconds default (3 hours).
DEFAULT_AFFINITY_TIMEOUT = 10800
#: EndpointSlice annotation: when the change that produced it happened (network programming latency).
LAST_CHANGE_TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"


@dataclass(frozen=True, order=True)
class ServicePortName:
    """namespace/name:port-name and the protocol (kube's ServicePortName)."""

    namespace: str
    name: str
    port: str
    protocol: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" + (f":{self.port}" if self.port else "")


@dataclass(frozen=True)
class ServicePort:
    """One port of a Service, with what the proxiers need to know about it."""

    name: ServicePortName
    cluster_ips: tuple[str, ...]
    port: int
    protocol: str
    node_port: int = 0
    external_ips: tuple[str, ...] = ()
    session_affinity: bool = False
    affinity_timeout: int = DEFAULT_AFFINITY_TIMEOUT
    internal_local: bool = False
    external_local: bool = False

    @property
    def externally_accessible(self) -> bool:
        return bool(self.node_port or self.external_ips)

    @property
    def uses_cluster_endpoints(self) -> bool:
        return not self.internal_local or (self.externally_accessible and not self.external_local)

    @property
    def uses_local_endpoints(self) -> bool:
        return self.internal_local or (self.external_local and self.externally_accessible)


@dataclass(frozen=True)
class Endpoint:
    """One endpoint address:port of a service port, with its EndpointSlice conditions."""

    ip: str
    port: int
    node_name: str = ""
    ready: bool = True
    serving: bool = True
    terminating: bool = False

    def __str__(self) -> str:
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"

    @property
    def family(self) -> int:
        return 6 if ":" in self.ip else 4


@dataclass
class ProxyTable:
    """Every proxied service port and its endpoints (all of them; `categorize` picks the usable ones)."""

    ports: dict[ServicePortName, ServicePort] = field(default_factory=dict)
    endpoints: dict[ServicePortName, list[Endpoint]] = field(default_factory=dict)


def _family(ip: str) -> int:
    return ipaddress.ip_address(ip).version


def service_ports(svc: Mapping[str, Any]) -> list[ServicePort]:
    """The proxied ports of a Service: none for headless (`clusterIP: None`), ExternalName or IP-less Services."""
    meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return []
    ips = [ip for ip in (spec.get("clusterIPs") or [spec.get("clusterIP")]) if ip and ip != "None"]
    if not ips:
        return []
    affinity = spec.get("sessionAffinity") == "ClientIP"
    timeout = (((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}).get("timeoutSeconds")) or 0
    node_ports = spec.get("type") in ("NodePort", "LoadBalancer")
    out = []
    for p in spec.get("ports") or []:
        protocol = str(p.get("protocol") or "TCP")
        out.append(
            ServicePort(
                name=ServicePortName(
                    str(meta.get("namespace") or "default"), str(meta.get("name")), str(p.get("name") or ""), protocol
                ),
                cluster_ips=tuple(ips),
                port=int(p.get("port") or 0),
                protocol=protocol,
                node_port=int(p.get("nodePort") or 0) if node_ports else 0,
                external_ips=tuple(spec.get("externalIPs") or ()),
                session_affinity=affinity,
                affinity_timeout=int(timeout or DEFAULT_AFFINITY_TIMEOUT),
                internal_local=spec.get("internalTrafficPolicy") == "Local",
                external_local=node_ports and spec.get("externalTrafficPolicy") == "Local",
            )
        )
    return out


def endpoints_by_port(slices: Iterable[Mapping[str, Any]]) -> dict[ServicePortName, list[Endpoint]]:
    """Endpoints of every service port named by the slices (merged across slices; a ready duplicate wins)."""
    merged: dict[ServicePortName, dict[tuple[str, int], Endpoint]] = {}
    for sl in slices:
        meta = sl.get("metadata") or {}
        svc = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if not svc or sl.get("addressType") not in ("IPv4", "IPv6"):
            continue
        ns = str(meta.get("namespace") or "default")
        for port in sl.get("ports") or []:
            if port.get("port") is None:
                continue
            key = ServicePortName(ns, svc, str(port.get("name") or ""), str(port.get("protocol") or "TCP"))
            bucket = merged.setdefault(key, {})
            for ep in sl.get("endpoints") or []:
                addrs = ep.get("addresses") or []
                if not addrs:
                    continue
                cond = ep.get("conditions") or {}
                ready = cond.get("ready") is not False  # nil means ready
                serving = ready if cond.get("serving") is None else bool(cond["serving"])
                e = Endpoint(
                    ip=str(addrs[0]),
                    port=int(port["port"]),
                    node_name=str(ep.get("nodeName") or ""),
                    ready=ready,
                    serving=serving,
                    terminating=bool(cond.get("terminating")),
                )
                old = bucket.get((e.ip, e.port))
                if old is None or (e.ready and not old.ready):
                    bucket[(e.ip, e.port)] = e
    return {k: sorted(v.values(), key=lambda e: (e.ip, e.port)) for k, v in merged.items()}


def build_table(services: Iterable[Mapping[str, Any]], slices: Iterable[Mapping[str, Any]]) -> ProxyTable:
    """The whole proxy table from the informers' caches."""
    table = ProxyTable()
    for svc in services:
        for sp in service_ports(svc):
            table.ports[sp.name] = sp
    for key, eps in endpoints_by_port(slices).items():
        if key in table.ports:
            table.endpoints[key] = eps
    return table


def _usable(endpoints: list[Endpoint], local_node: str | None) -> list[Endpoint]:
    """Ready endpoints (on `local_node` if given); if none, the serving-and-terminating ones (kube's fallback)."""
    pool = [e for e in endpoints if local_node is None or e.node_name == local_node]
    ready = [e for e in pool if e.ready]
    return ready or [e for e in pool if e.serving and e.terminating]


@dataclass(frozen=True)
class Categorized:
    """kube-proxy's CategorizeEndpoints result for one service port on one node."""

    cluster: list[Endpoint]
    local: list[Endpoint]
    has_any: bool

    def internal(self, sp: ServicePort) -> list[Endpoint]:
        """Endpoints for ClusterIP traffic."""
        return self.local if sp.internal_local else self.cluster

    def external(self, sp: ServicePort) -> list[Endpoint]:
        """Endpoints for NodePort / external IP traffic."""
        return self.local if sp.external_local else self.cluster

    @property
    def reachable(self) -> list[Endpoint]:
        seen: dict[tuple[str, int], Endpoint] = {(e.ip, e.port): e for e in self.cluster}
        for e in self.local:
            seen.setdefault((e.ip, e.port), e)
        return list(seen.values())


def categorize(sp: ServicePort, endpoints: list[Endpoint], node_name: str, family: int | None = None) -> Categorized:
    """Cluster-wide and node-local usable endpoints of `sp` (of one IP family when given)."""
    if family is not None:
        endpoints = [e for e in endpoints if e.family == family]
    cluster = _usable(endpoints, None) if sp.uses_cluster_endpoints else []
    local = _usable(endpoints, node_name) if sp.uses_local_endpoints else []
    has_any = bool(cluster) or bool(_usable(endpoints, None))
    return Categorized(cluster=cluster, local=local, has_any=has_any)


def cluster_ip_of_family(sp: ServicePort, family: int) -> str | None:
    return next((ip for ip in sp.cluster_ips if _family(ip) == family), None)
