"""ControllerRevision strategy (apps/v1): mandatory immutable `data`, non-negative `revision`, the CONTROLLER table."""

from __future__ import annotations

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
)
from pykubeadm.apiserver.status import Cause

__all__ = ["ControllerRevisionStrategy", "controller_name"]


def controller_name(obj: Obj) -> str:
    """`<kind>.<group>/<name>` of the controlling owner (kubectl's formatResourceName), or `<none>`."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            kind = str(ref.get("kind", "")).lower() + (f".{group}" if group else "")
            return f"{kind}/{ref.get('name', '')}"
    return "<none>"


class ControllerRevisionStrategy(Strategy):
    top_fields = frozenset({"data", "revision"})
    kind = "ControllerRevision"
    plural = "controllerrevisions"
    group = "apps"

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        obj.setdefault("revision", 0)

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        obj.setdefault("revision", 0)

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        causes: list[Cause] = []
        if obj.get("data") is None:
            causes.append(Cause("FieldValueRequired", "Required value: data is mandatory", "data"))
        rev = obj.get("revision", 0)
        if not isinstance(rev, int) or isinstance(rev, bool):
            causes.append(field_invalid("revision", rev, "must be an integer"))
        elif rev < 0:
            causes.append(field_invalid("revision", rev, "must be greater than or equal to 0"))
        return causes

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        causes = self.validate(obj, ctx)
        if obj.get("data") != old.get("data"):
            causes.append(field_immutable("data", "{...}"))
        return causes

    def table_columns(self) -> list[Obj]:
        return name_age_columns(
            col("Controller", "string", "Controller of the object."),
            col("Revision", "integer", "Revision indicates the revision of the state represented by Data."),
        )

    def table_row(self, obj: Obj) -> list[Any]:
        return name_age_row(obj, controller_name(obj), obj.get("revision", 0))
