"""PriorityClass strategy (scheduling.k8s.io/v1): reserved `system-` names, immutable value, the PriorityClass table."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.admission.priority import SYSTEM_PRIORITY_CLASSES
from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy, field_immutable, field_invalid, required
from pykubeadm.apiserver.status import Cause

__all__ = ["HIGHEST_USER_PRIORITY", "SYSTEM_CLASSES", "PriorityClassStrategy"]

#: The two built-in classes kube-apiserver creates at start (one table, kept by the Priority admission plugin).
SYSTEM_CLASSES = SYSTEM_PRIORITY_CLASSES
HIGHEST_USER_PRIORITY = 1_000_000_000


class PriorityClassStrategy(Strategy):
    top_fields = frozenset({"value", "globalDefault", "description", "preemptionPolicy"})
    kind = "PriorityClass"
    plural = "priorityclasses"
    group = "scheduling.k8s.io"
    namespaced = False
    short_names = ("pc",)

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        name = obj["metadata"].get("name", "")
        value = obj.get("value")
        causes: list[Cause] = []
        if not isinstance(value, int) or isinstance(value, bool):
            causes.append(required("value"))
        if name.startswith("system-"):
            if name not in SYSTEM_CLASSES:
                causes.append(
                    field_invalid(
                        "metadata.name",
                        name,
                        "priority class names with 'system-' prefix are reserved for system use only",
                    )
                )
            elif value != SYSTEM_CLASSES[name][0]:
                causes.append(
                    field_invalid(
                        "value", value, f"value of system priority class {name} must be {SYSTEM_CLASSES[name][0]}"
                    )
                )
        elif isinstance(value, int) and value > HIGHEST_USER_PRIORITY:
            causes.append(
                field_invalid(
                    "value", value, f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"
                )
            )
        return causes

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        causes = self.validate(obj, ctx)
        if obj.get("value") != old.get("value"):
            causes.append(field_immutable("value", obj.get("value")))
        return causes

    def table_columns(self) -> list[Obj]:
        return [
            NAME_COL,
            col("Value", "integer", "The value of this priority class."),
            col(
                "Global-Default",
                "boolean",
                "globalDefault specifies whether this PriorityClass should be considered as the default priority.",
            ),
            AGE_COL,
            col(
                "PreemptionPolicy",
                "string",
                "preemptionPolicy is the Policy for preempting pods with lower priority.",
                priority=1,
            ),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        return [
            obj["metadata"].get("name", ""),
            obj.get("value", 0),
            bool(obj.get("globalDefault")),
            age(obj),
            obj.get("preemptionPolicy", ""),
        ]
