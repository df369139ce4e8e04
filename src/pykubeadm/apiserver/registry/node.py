"""Node strategy: cluster-scoped (`/registry/minions`), status settable on create, the NAME STATUS ROLES AGE VERSION table.

Validation as kube-apiserver's ValidateNode / ValidateNodeUpdate (pkg/apis/core/validation) for the spec: every
`spec.podCIDRs` entry a CIDR, at most one per IP family, no duplicates; and once set, `spec.podCIDRs` and
`spec.providerID` never change again ("node updates may not change podCIDR except from \"\" to valid": the
controller-manager's nodeipam assigns them once, and a node's Pod network is built on them). `spec.podCIDR` is
v1's copy of the first entry: as in kube's conversion to the internal object, a Node with `podCIDR` alone gets
`podCIDRs: [podCIDR]`, and `podCIDR` is always `podCIDRs[0]` once stored.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy
from pykubeadm.apiserver.status import Cause

__all__ = ["NodeStrategy", "node_roles", "node_status"]


def node_status(obj: Obj) -> str:
    conds = (obj.get("status") or {}).get("conditions") or []
    ready = next((c for c in conds if c.get("type") == "Ready"), None)
    s = "Unknown" if ready is None else "Ready" if ready.get("status") == "True" else "NotReady"
    if (obj.get("spec") or {}).get("unschedulable"):
        s += ",SchedulingDisabled"
    return s


def node_roles(obj: Obj) -> str:
    roles = set()
    for k, v in (obj.get("metadata", {}).get("labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k[len("node-role.kubernetes.io/") :]
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    return ",".join(sorted(roles)) or "<none>"


def _address(obj: Obj, type_: str) -> str:
    for a in (obj.get("status") or {}).get("addresses") or []:
        if a.get("type") == type_:
            return a.get("address", "<none>")
    return "<none>"


_CHANGED = 'node updates may not change {} except from "" to valid'


def _normalize_pod_cidrs(obj: Obj) -> None:
    """v1 `spec.podCIDR` and `spec.podCIDRs` as one field (kube's internal Node has only podCIDRs)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    cidrs = spec.get("podCIDRs")
    if not cidrs and spec.get("podCIDR"):
        spec["podCIDRs"] = cidrs = [spec["podCIDR"]]
    if cidrs and isinstance(cidrs, list):
        spec["podCIDR"] = cidrs[0]


def _go_strings(values: list[Any]) -> str:
    """A []string as Go's %#v shows it in a field error."""
    return "[]string{" + ", ".join(json.dumps(str(v)) for v in values) + "}"


def _pod_cidrs(obj: Obj) -> list[Any]:
    cidrs = (obj.get("spec") or {}).get("podCIDRs")
    return cidrs if isinstance(cidrs, list) else []


def validate_pod_cidrs(obj: Obj) -> list[Cause]:
    """ValidateNode's podCIDRs rules: valid CIDRs, at most one per IP family, no duplicates."""
    cidrs = _pod_cidrs(obj)
    causes: list[Cause] = []
    families = []
    for i, value in enumerate(cidrs):
        try:
            families.append(ipaddress.ip_network(str(value), strict=False).version)
        except ValueError:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {_go_strings(cidrs)}: must be valid CIDR",
                    f"spec.podCIDRs[{i}]",
                )
            )
    if len(cidrs) > 1:
        if len(cidrs) > 2 or sorted(families) != [4, 6]:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {_go_strings(cidrs)}: may specify no more than one CIDR for each IP family",
                    "spec.podCIDRs",
                )
            )
        seen: set[str] = set()
        for i, value in enumerate(cidrs):
            if str(value) in seen:
                causes.append(Cause("FieldValueDuplicate", f'Duplicate value: "{value}"', f"spec.podCIDRs[{i}]"))
            seen.add(str(value))
    return causes


def validate_spec_update(obj: Obj, old: Obj) -> list[Cause]:
    """ValidateNodeUpdate's spec rules: podCIDRs and providerID may only go from unset to set."""
    causes: list[Cause] = []
    before, after = _pod_cidrs(old), _pod_cidrs(obj)
    changed = "Forbidden: " + _CHANGED.format("podCIDR")
    if before:
        if len(before) != len(after):
            causes.append(Cause("FieldValueForbidden", changed, "spec.podCIDRs"))
        else:  # one error per changed entry, as kube reports them
            causes += [
                Cause("FieldValueForbidden", changed, "spec.podCIDRs")
                for o, n in zip(before, after, strict=True)
                if o != n
            ]
    old_id = (old.get("spec") or {}).get("providerID") or ""
    if old_id and old_id != ((obj.get("spec") or {}).get("providerID") or ""):
        causes.append(Cause("FieldValueForbidden", "Forbidden: " + _CHANGED.format("providerID"), "spec.providerID"))
    return causes


class NodeStrategy(Strategy):
    top_fields = frozenset({"spec", "status"})
    kind = "Node"
    plural = "nodes"
    namespaced = False
    short_names = ("no",)
    storage_prefix = "minions"
    subresources = ("status",)
    field_labels: tuple[str, ...] = ("spec.unschedulable",)

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        """Nodes may set status on create (the kubelet registers with its initial status)."""
        _normalize_pod_cidrs(obj)

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        super().prepare_for_update(obj, old, ctx)
        _normalize_pod_cidrs(obj)

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        return validate_pod_cidrs(obj)

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        return validate_pod_cidrs(obj) + validate_spec_update(obj, old)

    def table_columns(self) -> list[Obj]:
        return [
            NAME_COL,
            col("Status", "string", "The status of the node"),
            col("Roles", "string", "The roles of the node"),
            AGE_COL,
            col("Version", "string", "Kubelet Version reported by the node."),
            col("Internal-IP", "string", "List of internal IPs for the node.", priority=1),
            col("External-IP", "string", "List of external IPs for the node.", priority=1),
            col("OS-Image", "string", "OS Image reported by the node from /etc/os-release.", priority=1),
            col("Kernel-Version", "string", "Kernel Version reported by the node.", priority=1),
            col("Container-Runtime", "string", "Container Runtime Version reported by the node.", priority=1),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        info = (obj.get("status") or {}).get("nodeInfo") or {}
        return [
            obj["metadata"].get("name", ""),
            node_status(obj),
            node_roles(obj),
            age(obj),
            info.get("kubeletVersion", ""),
            _address(obj, "InternalIP"),
            _address(obj, "ExternalIP"),
            info.get("osImage") or "<unknown>",
            info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>",
        ]
