"""Priority admission: resolve a pod's priorityClassName to spec.priority (built-in system classes included) and keep
at most one globalDefault PriorityClass.
"""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation, forbidden
from pykubeadm.apiserver.objects import ObjectSource

__all__ = ["SYSTEM_PRIORITY_CLASSES", "Priority", "system_priority_class_objects"]

PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"
#: The built-in classes kube-apiserver creates at start: name → (value, description).
SYSTEM_PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "system-node-critical": (
        2000001000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    "system-cluster-critical": (
        2000000000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
}


def system_priority_class_objects() -> list[dict[str, Any]]:
    """The system PriorityClass objects, for the core to create at start."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": False,
            "description": desc,
            "preemptionPolicy": "PreemptLowerPriority",
        }
        for name, (value, desc) in SYSTEM_PRIORITY_CLASSES.items()
    ]


class Priority:
    name = "Priority"

    def __init__(self, source: ObjectSource):
        self._source = source

    def handles(self, op: Operation) -> bool:
        return op in (Operation.CREATE, Operation.UPDATE)

    async def _class(self, name: str) -> dict[str, Any] | None:
        obj = await self._source.get(PRIORITY_CLASSES, "", name)
        if obj is None and name in SYSTEM_PRIORITY_CLASSES:
            obj = next(o for o in system_priority_class_objects() if o["metadata"]["name"] == name)
        return obj

    async def admit(self, attrs: AdmissionAttributes) -> None:
        if attrs.group or attrs.resource != "pods" or attrs.subresource or attrs.operation is not Operation.CREATE:
            return
        spec = (attrs.obj or {}).setdefault("spec", {})
        name = spec.get("priorityClassName") or ""
        pc: dict[str, Any] | None
        if name:
            pc = await self._class(name)
            if pc is None:
                raise forbidden(attrs, f"no PriorityClass with name {name} was found")
        else:
            defaults = [c for c in await self._source.list(PRIORITY_CLASSES) if c.get("globalDefault")]
            pc = min(defaults, key=lambda c: c.get("value", 0)) if defaults else None
            if pc is not None:
                spec["priorityClassName"] = pc["metadata"]["name"]
        value = int(pc.get("value", 0)) if pc else 0
        if spec.get("priority") is not None and spec["priority"] != value:
            raise forbidden(
                attrs,
                f"the integer value of priority ({spec['priority']}) must not be provided in pod spec; priority "
                f"admission controller computed {value} from the given PriorityClass name",
            )
        spec["priority"] = value
        if pc is not None and pc.get("preemptionPolicy"):
            if spec.get("preemptionPolicy") and spec["preemptionPolicy"] != pc["preemptionPolicy"]:
                raise forbidden(
                    attrs,
                    f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not be provided in pod "
                    f"spec; priority admission controller computed {pc['preemptionPolicy']} from the given "
                    "PriorityClass name",
                )
            spec["preemptionPolicy"] = pc["preemptionPolicy"]

    async def validate(self, attrs: AdmissionAttributes) -> None:
        if attrs.group != "scheduling.k8s.io" or attrs.resource != "priorityclasses" or attrs.subresource:
            return
        obj = attrs.obj or {}
        if not obj.get("globalDefault"):
            return
        me = (obj.get("metadata") or {}).get("name")
        for other in await self._source.list(PRIORITY_CLASSES):
            if other.get("globalDefault") and other["metadata"]["name"] != me:
                raise forbidden(
                    attrs,
                    f"PriorityClass {other['metadata']['name']} is already marked as default. Only one default can exist",
                )
