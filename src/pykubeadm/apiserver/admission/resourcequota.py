"""ResourceQuota admission (validating): a create that would take a namespace's usage over any of its quotas' `hard`
limits is refused with kube's `exceeded quota: <name>, requested: …, used: …, limited: …` (403), and a pod that does
not set a compute resource a quota tracks gets `failed quota: <name>: must specify …`. Usage is counted from the
stored objects at admission time (object counts, `count/<resource>[.<group>]`, pod requests and limits, PVC storage).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation, forbidden
from pykubeadm.apiserver.objects import ObjectSource
from pykubeadm.util.quantity import parse_quantity

__all__ = ["ResourceQuota", "format_quantity", "pod_usage"]

Obj = dict[str, Any]

#: Object-count resources with a legacy name in a quota's `hard` (resource plural → quota key).
_LEGACY_COUNTS = {
    "pods": "pods",
    "services": "services",
    "configmaps": "configmaps",
    "secrets": "secrets",
    "persistentvolumeclaims": "persistentvolumeclaims",
    "replicationcontrollers": "replicationcontrollers",
    "resourcequotas": "resourcequotas",
}
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def format_quantity(value: Decimal) -> str:
    """A quantity as kube prints it: whole numbers plain or with a binary suffix, fractions in milli-units."""
    if value == value.to_integral_value():
        n = int(value)
        for suffix, size in _BINARY:
            if n and n % size == 0:
                return f"{n // size}{suffix}"
        return str(n)
    return f"{int(value * 1000)}m"


def _q(v: Any) -> Decimal:
    try:
        return parse_quantity(str(v))
    except ValueError:
        return Decimal(0)


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_usage(pod: Obj) -> dict[str, Decimal]:
    """requests.*/limits.* of a pod (sum over containers, at least the largest init container), plus `pods`."""
    spec = pod.get("spec") or {}
    out: dict[str, Decimal] = {"pods": Decimal(1), "count/pods": Decimal(1)}
    for kind in ("requests", "limits"):
        for res in _COMPUTE:
            total = sum(
                (_q(((c.get("resources") or {}).get(kind) or {}).get(res, 0)) for c in spec.get("containers") or []),
                Decimal(0),
            )
            init = max(
                (
                    _q(((c.get("resources") or {}).get(kind) or {}).get(res, 0))
                    for c in spec.get("initContainers") or []
                ),
                default=Decimal(0),
            )
            value = max(total, init)
            if value:
                out[f"{kind}.{res}"] = value
                if kind == "requests":
                    out[res] = value
    return out


def _object_usage(resource: str, group: str, obj: Obj) -> dict[str, Decimal]:
    if resource == "pods" and not group:
        return {} if _terminal(obj) else pod_usage(obj)
    key = f"count/{resource}.{group}" if group else f"count/{resource}"
    out = {key: Decimal(1)}
    if not group and resource in _LEGACY_COUNTS:
        out[_LEGACY_COUNTS[resource]] = Decimal(1)
    if not group and resource == "services":
        stype = (obj.get("spec") or {}).get("type")
        if stype == "LoadBalancer":
            out["services.loadbalancers"] = Decimal(1)
        if stype in ("LoadBalancer", "NodePort"):
            out["services.nodeports"] = Decimal(len((obj.get("spec") or {}).get("ports") or []))
    if not group and resource == "persistentvolumeclaims":
        storage = _q((((obj.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage", 0))
        out["requests.storage"] = storage
    return out


def _pretty(values: dict[str, Decimal], keys: list[str]) -> str:
    return ",".join(f"{k}={format_quantity(values.get(k, Decimal(0)))}" for k in sorted(keys))


class ResourceQuota:
    name = "ResourceQuota"

    def __init__(self, source: ObjectSource) -> None:
        self._source = source

    def handles(self, op: Operation) -> bool:
        return op is Operation.CREATE

    async def validate(self, attrs: AdmissionAttributes) -> None:
        if attrs.subresource or not attrs.namespace or attrs.obj is None:
            return
        quotas = await self._source.list("resourcequotas", attrs.namespace)
        if not quotas:
            return
        requested = _object_usage(attrs.resource, attrs.group, attrs.obj)
        if not requested:
            return
        resource_name = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
        used: dict[str, Decimal] | None = None
        for quota in sorted(quotas, key=lambda q: q.get("metadata", {}).get("name", "")):
            hard = {k: _q(v) for k, v in ((quota.get("spec") or {}).get("hard") or {}).items()}
            qname = quota.get("metadata", {}).get("name", "")
            if attrs.resource == "pods" and not attrs.group:
                missing = self._missing_compute(attrs.obj, hard)
                if missing:
                    raise forbidden(attrs, f"failed quota: {qname}: must specify {missing}")
            tracked = [k for k in requested if k in hard]
            if not tracked:
                continue
            if used is None:
                used = await self._usage(resource_name, attrs)
            exceeded = [k for k in tracked if used.get(k, Decimal(0)) + requested[k] > hard[k]]
            if exceeded:
                raise forbidden(
                    attrs,
                    f"exceeded quota: {qname}, requested: {_pretty(requested, exceeded)}, "
                    f"used: {_pretty(used, exceeded)}, limited: {_pretty(hard, exceeded)}",
                )

    @staticmethod
    def _missing_compute(pod: Obj, hard: dict[str, Decimal]) -> str:
        parts = []
        for key in sorted(hard):
            kind, _, res = key.partition(".")
            if kind not in ("requests", "limits") or res not in _COMPUTE:
                continue
            lacking = [
                c.get("name", "")
                for c in (pod.get("spec") or {}).get("containers") or []
                if res not in (((c.get("resources") or {}).get(kind)) or {})
            ]
            if lacking:
                parts.append(f"{key} for: {','.join(lacking)}")
        return "; ".join(parts)

    async def _usage(self, resource_name: str, attrs: AdmissionAttributes) -> dict[str, Decimal]:
        total: dict[str, Decimal] = {}
        for obj in await self._source.list(resource_name, attrs.namespace):
            if (obj.get("metadata") or {}).get("deletionTimestamp") and attrs.resource == "pods":
                continue
            for k, v in _object_usage(attrs.resource, attrs.group, obj).items():
                total[k] = total.get(k, Decimal(0)) + v
        return total
