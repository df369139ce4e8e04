"""Node strategy: cluster-scoped (`/registry/minions`), status settable on create, the NAME STATUS ROLES AGE VERSION table."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy

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
