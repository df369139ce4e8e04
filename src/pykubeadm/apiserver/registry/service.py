"""Service strategy (`/registry/services/specs`): defaults, ClusterIP/NodePort allocation, the Service table."""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Callable
from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy, field_immutable, field_invalid, required
from pykubeadm.apiserver.status import Cause

__all__ = ["IPAllocator", "ServiceStrategy"]

_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")


class IPAllocator:
    """Picks free addresses in --service-cluster-ip-range; `in_use` returns the addresses services hold now."""

    def __init__(self, cidr: str = "10.96.0.0/12", in_use: Callable[[], set[str]] | None = None):
        self.network = ipaddress.ip_network(cidr.split(",")[0].strip(), strict=False)
        self.in_use = in_use or (lambda: set())
        self.reserved: set[str] = set()

    def first(self) -> str:
        return str(self.network.network_address + 1)

    def static_band(self) -> int:
        """How many addresses after the network address are kept for explicit requests first (kube-apiserver's
        ipallocator range offset: min(max(16, size/16), 256); none for a range smaller than 16)."""
        size = self.network.num_addresses
        return 0 if size < 16 else min(max(16, size // 16), 256)

    def allocate(self) -> str:
        """A free address: random in the upper (dynamic) band first, then the lower (static) band, as kube does."""
        used = self.in_use() | self.reserved
        size = self.network.num_addresses
        first, split, last = 1, 1 + self.static_band(), max(2, size - 2)  # offsets; no network/broadcast address
        for lo, hi in ((split, last), (first, split - 1)):
            if lo > hi:
                continue
            for _ in range(64):
                ip = str(self.network.network_address + random.randint(lo, hi))
                if ip not in used:
                    self.reserved.add(ip)
                    return ip
            for off in range(lo, hi + 1):
                ip = str(self.network.network_address + off)
                if ip not in used:
                    self.reserved.add(ip)
                    return ip
        raise RuntimeError("range is full")

    def contains(self, ip: str) -> bool:
        try:
            return ipaddress.ip_address(ip) in self.network
        except ValueError:
            return False


class ServiceStrategy(Strategy):
    top_fields = frozenset({"spec", "status"})
    kind = "Service"
    plural = "services"
    return_deleted_object = True
    short_names = ("svc",)
    categories = ("all",)
    storage_prefix = "services/specs"
    subresources = ("status",)
    field_labels: tuple[str, ...] = ("spec.clusterIP", "spec.type")
    allocator: IPAllocator = IPAllocator()

    def default_status(self) -> Obj | None:
        return {"loadBalancer": {}}

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        super().prepare_for_create(obj, ctx)
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for p in spec.get("ports") or []:
            if isinstance(p, dict):
                p.setdefault("protocol", "TCP")
                if "port" in p:
                    p.setdefault("targetPort", p["port"])
        if spec["type"] != "ExternalName":
            ip = spec.get("clusterIP") or ""
            if not ip and spec.get("clusterIPs"):
                ip = spec["clusterIPs"][0]
            if ip != "None":
                if not ip:
                    ip = self.allocator.allocate()
                spec["clusterIP"] = ip
                spec["clusterIPs"] = [ip]
                spec.setdefault("ipFamilies", ["IPv6" if ":" in ip else "IPv4"])
            else:
                spec["clusterIPs"] = ["None"]
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("internalTrafficPolicy", "Cluster")
        if spec["type"] in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
            for p in spec.get("ports") or []:
                if isinstance(p, dict) and not p.get("nodePort"):
                    p["nodePort"] = random.randint(30000, 32767)

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        super().prepare_for_update(obj, old, ctx)
        spec, ospec = obj.get("spec"), old.get("spec") or {}
        if isinstance(spec, dict):
            for k in (
                "clusterIP",
                "clusterIPs",
                "ipFamilies",
                "ipFamilyPolicy",
                "internalTrafficPolicy",
                "sessionAffinity",
            ):
                if k not in spec and k in ospec:
                    spec[k] = ospec[k]
            spec.setdefault("type", ospec.get("type", "ClusterIP"))

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [required("spec")]
        causes = []
        if spec.get("type") not in _TYPES:
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: "{spec.get("type")}": supported values: '
                    + ", ".join(f'"{t}"' for t in _TYPES),
                    "spec.type",
                )
            )
        ports = spec.get("ports") or []
        if not ports and spec.get("type") != "ExternalName" and spec.get("clusterIP") != "None":
            causes.append(required("spec.ports"))
        for i, p in enumerate(ports):
            port = p.get("port") if isinstance(p, dict) else None
            if not isinstance(port, int) or not 1 <= port <= 65535:
                causes.append(
                    field_invalid(
                        f"spec.ports[{i}].port",
                        port if port is not None else 0,
                        "must be between 1 and 65535, inclusive",
                    )
                )
        ip = spec.get("clusterIP", "")
        if ip and ip != "None" and not self.allocator.contains(ip):
            causes.append(
                field_invalid(
                    "spec.clusterIPs",
                    ip,
                    f"failed to allocate IP {ip}: the provided IP ({ip}) is not "
                    f"in the valid range. The range of valid IPs is {self.allocator.network}",
                )
            )
        return causes

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        causes = self.validate(obj, ctx)
        o, n = (old.get("spec") or {}).get("clusterIP"), (obj.get("spec") or {}).get("clusterIP")
        if o and n != o and (obj.get("spec") or {}).get("type") != "ExternalName":
            causes.append(field_immutable("spec.clusterIPs[0]", n or ""))
        return causes

    def table_columns(self) -> list[Obj]:
        return [
            NAME_COL,
            col("Type", "string", "type determines how the Service is exposed."),
            col("Cluster-IP", "string", "clusterIP is the IP address of the service."),
            col("External-IP", "string", "externalIPs is a list of IP addresses."),
            col("Port(s)", "string", "The list of ports that are exposed by this service."),
            AGE_COL,
            col(
                "Selector",
                "string",
                "Route service traffic to pods with label keys and values matching this selector.",
                priority=1,
            ),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        spec = obj.get("spec") or {}
        ports = []
        for p in spec.get("ports") or []:
            s = f"{p.get('port')}:{p['nodePort']}" if p.get("nodePort") else f"{p.get('port')}"
            ports.append(f"{s}/{p.get('protocol', 'TCP')}")
        ext = spec.get("externalIPs") or []
        lb = [
            i.get("ip") or i.get("hostname")
            for i in ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        ]
        external = ",".join(ext + lb) or ("<pending>" if spec.get("type") == "LoadBalancer" else "<none>")
        if spec.get("type") == "ExternalName":
            external = spec.get("externalName", "<none>")
        sel = spec.get("selector") or {}
        return [
            obj["metadata"].get("name", ""),
            spec.get("type", ""),
            spec.get("clusterIP") or "<none>",
            external,
            ",".join(ports) or "<none>",
            age(obj),
            ",".join(f"{k}={v}" for k, v in sorted(sel.items())) or "<none>",
        ]
