"""Namespace strategy: phase Active on create, the `kubernetes` finalizer, the metadata.name label, Terminating on delete."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy

__all__ = ["FINALIZER", "NAME_LABEL", "NamespaceStrategy"]

NAME_LABEL = "kubernetes.io/metadata.name"
FINALIZER = "kubernetes"


class NamespaceStrategy(Strategy):
    top_fields = frozenset({"spec", "status"})
    kind = "Namespace"
    plural = "namespaces"
    namespaced = False
    short_names = ("ns",)
    verbs = ("create", "delete", "get", "list", "patch", "update", "watch")
    subresources = ("finalize", "status")
    name_rule = "label"
    field_labels: tuple[str, ...] = ("status.phase",)

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        obj["status"] = {"phase": "Active"}
        spec = obj.setdefault("spec", {})
        fin = list(spec.get("finalizers") or [])
        if FINALIZER not in fin:
            fin.append(FINALIZER)
        spec["finalizers"] = fin
        self._label(obj)

    def _label(self, obj: Obj) -> None:
        meta = obj["metadata"]
        if meta.get("name"):
            meta.setdefault("labels", {})
            if meta["labels"] is None:
                meta["labels"] = {}
            meta["labels"][NAME_LABEL] = meta["name"]

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        obj["status"] = old.get("status", {})
        obj["spec"] = old.get("spec", {})
        self._label(obj)

    def prepare_for_subresource(self, sub: str, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        if sub == "finalize":
            fin = (obj.get("spec") or {}).get("finalizers")
            super().prepare_for_subresource("status", obj, old, ctx)
            obj["status"] = old.get("status", {})
            obj["spec"] = {"finalizers": fin} if fin else {}
        else:
            super().prepare_for_subresource(sub, obj, old, ctx)

    def prepare_for_delete(self, obj: Obj) -> None:
        """A Namespace being deleted is Terminating (its deletion has no grace period field)."""
        obj["status"] = {**(obj.get("status") or {}), "phase": "Terminating"}
        obj["metadata"].pop("deletionGracePeriodSeconds", None)

    def has_finalizers(self, obj: Obj) -> bool:
        return bool(obj.get("metadata", {}).get("finalizers")) or bool((obj.get("spec") or {}).get("finalizers"))

    def table_columns(self) -> list[Obj]:
        return [NAME_COL, col("Status", "string", "The status of the namespace"), AGE_COL]

    def table_row(self, obj: Obj) -> list[Any]:
        return [obj["metadata"].get("name", ""), (obj.get("status") or {}).get("phase", ""), age(obj)]
