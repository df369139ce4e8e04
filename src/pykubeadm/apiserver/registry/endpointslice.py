"""EndpointSlice strategy (discovery.k8s.io/v1): required immutable addressType, address/port validation, port
defaults, a generation bumped on every endpoints/ports change, and the ADDRESSTYPE PORTS ENDPOINTS table.

The endpointslice controller labels its slices `kubernetes.io/service-name` (SERVICE_NAME_LABEL) and
`endpointslice.kubernetes.io/managed-by`; the API does not require them, as in kube-apiserver.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pykubeadm.apiserver.printing import col
from pykubeadm.apiserver.registry.base import (
    Obj,
    RequestContext,
    Strategy,
    field_immutable,
    field_invalid,
    name_age_columns,
    name_age_row,
    required,
    validate_dns_label,
    validate_dns_subdomain,
)
from pykubeadm.apiserver.registry.jobspec import not_supported
from pykubeadm.apiserver.status import Cause

__all__ = ["SERVICE_NAME_LABEL", "EndpointSliceStrategy"]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
_ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_MAX_ENDPOINTS = 1000
_MAX_PORTS = 20000
_MAX_ADDRESSES = 100


def _more(items: list[str], total: int, limit: int = 3) -> str:
    text = ",".join(items[:limit])
    if total > limit:
        return f"{text} + {total - limit} more..."
    return text or "<unset>"


def _validate_address(addr: Any, kind: str, path: str) -> list[Cause]:
    if kind == "FQDN":
        return validate_dns_subdomain(str(addr), path)
    try:
        ip = ipaddress.ip_address(str(addr))
    except ValueError:
        return [field_invalid(path, addr, "must be a valid IP address")]
    if (kind == "IPv4") != (ip.version == 4):
        return [field_invalid(path, addr, f"must be an {kind} address")]
    return []


class EndpointSliceStrategy(Strategy):
    top_fields = frozenset({"addressType", "endpoints", "ports"})
    kind = "EndpointSlice"
    plural = "endpointslices"
    group = "discovery.k8s.io"

    def _defaults(self, obj: Obj) -> None:
        obj.setdefault("endpoints", [])
        for port in obj.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("name", "")
                port.setdefault("protocol", "TCP")

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        self._defaults(obj)
        obj["metadata"]["generation"] = 1

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        self._defaults(obj)
        gen = int(old["metadata"].get("generation") or 1)
        changed = any(obj.get(k) != old.get(k) for k in ("addressType", "endpoints", "ports"))
        obj["metadata"]["generation"] = gen + 1 if changed else gen

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        causes: list[Cause] = []
        kind = obj.get("addressType")
        if not kind:
            causes.append(required("addressType"))
        elif kind not in _ADDRESS_TYPES:
            causes.append(not_supported("addressType", kind, _ADDRESS_TYPES))
        endpoints = obj.get("endpoints") or []
        if len(endpoints) > _MAX_ENDPOINTS:
            causes.append(
                Cause(
                    "FieldValueTooMany",
                    f"Too many: {len(endpoints)}: must have at most {_MAX_ENDPOINTS} items",
                    "endpoints",
                )
            )
        for i, ep in enumerate(endpoints):
            path = f"endpoints[{i}]"
            addrs = (ep or {}).get("addresses") or []
            if not addrs:
                causes.append(
                    Cause("FieldValueRequired", "Required value: must contain at least 1 address", f"{path}.addresses")
                )
            elif len(addrs) > _MAX_ADDRESSES:
                causes.append(
                    Cause(
                        "FieldValueTooMany",
                        f"Too many: {len(addrs)}: must have at most {_MAX_ADDRESSES} items",
                        f"{path}.addresses",
                    )
                )
            if kind in _ADDRESS_TYPES:
                for j, a in enumerate(addrs):
                    causes += _validate_address(a, kind, f"{path}.addresses[{j}]")
            if ep.get("hostname"):
                causes += validate_dns_label(ep["hostname"], f"{path}.hostname")
            if ep.get("nodeName"):
                causes += validate_dns_subdomain(ep["nodeName"], f"{path}.nodeName")
        ports = obj.get("ports") or []
        if len(ports) > _MAX_PORTS:
            causes.append(
                Cause("FieldValueTooMany", f"Too many: {len(ports)}: must have at most {_MAX_PORTS} items", "ports")
            )
        names: set[str] = set()
        for i, p in enumerate(ports):
            path = f"ports[{i}]"
            name = p.get("name") or ""
            if name:
                causes += validate_dns_label(name, f"{path}.name")
            if name in names:
                causes.append(Cause("FieldValueDuplicate", f'Duplicate value: "{name}"', f"{path}.name"))
            names.add(name)
            if p.get("protocol") not in _PROTOCOLS:
                causes.append(not_supported(f"{path}.protocol", p.get("protocol") or "", _PROTOCOLS))
            port = p.get("port")
            if port is not None and (not isinstance(port, int) or not 0 <= port <= 65535):
                causes.append(field_invalid(f"{path}.port", port, "must be between 0 and 65535, inclusive"))
        return causes

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        causes = self.validate(obj, ctx)
        if obj.get("addressType") != old.get("addressType"):
            causes.append(field_immutable("addressType", obj.get("addressType", "")))
        return causes

    def table_columns(self) -> list[Obj]:
        return name_age_columns(
            col("AddressType", "string", "addressType specifies the type of address carried by this EndpointSlice."),
            col("Ports", "string", "ports specifies the list of network ports exposed by each endpoint in this slice."),
            col("Endpoints", "string", "endpoints is a list of unique endpoints in this slice."),
        )

    def table_row(self, obj: Obj) -> list[Any]:
        ports = obj.get("ports") or []
        shown = [str(p["port"]) if p.get("port") is not None else (p.get("name") or "*") for p in ports]
        addrs = [str(a) for ep in obj.get("endpoints") or [] for a in (ep or {}).get("addresses") or []]
        return name_age_row(obj, obj.get("addressType", ""), _more(shown, len(ports)), _more(addrs, len(addrs)))
