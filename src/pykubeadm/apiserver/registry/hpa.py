"""autoscaling/v1 HorizontalPodAutoscaler: served beside autoscaling/v2 (the preferred and storage version) through
the conversion in hpaconversion.py. Its facts are v2's (names, short name, defaults); its table is v2's table of the
converted object, as kube prints both versions from the internal one."""

from __future__ import annotations

import dataclasses
from typing import Any

from pykubeadm.apiserver.registry import hpaconversion
from pykubeadm.apiserver.registry.base import Obj, RequestContext
from pykubeadm.apiserver.registry.builtin_kinds import GENERIC_KINDS
from pykubeadm.apiserver.registry.generic import GenericStrategy

__all__ = ["HPAV1Strategy"]

#: The annotations that carry v2's status in a v1 object: a status write sets them, a spec write keeps them.
_STATUS_ANNOTATIONS = (hpaconversion.CURRENT_METRICS_ANNOTATION, hpaconversion.CONDITIONS_ANNOTATION)


def _v2_spec() -> Any:
    return next(k for k in GENERIC_KINDS if (k.group, k.kind) == ("autoscaling", "HorizontalPodAutoscaler"))


def _carry(annotations_from: Obj, obj: Obj) -> None:
    """Set `obj`'s status annotations to those of `annotations_from` (absent ones removed)."""
    source = (annotations_from.get("metadata") or {}).get("annotations") or {}
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    for key in _STATUS_ANNOTATIONS:
        if key in source:
            annotations[key] = source[key]
        else:
            annotations.pop(key, None)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)


class HPAV1Strategy(GenericStrategy):
    storage_version = "v2"

    def __init__(self) -> None:
        v2 = _v2_spec()
        super().__init__(dataclasses.replace(v2, version="v1", mutate=None))
        self._v2 = GenericStrategy(v2)

    def to_storage(self, obj: Obj) -> Obj:
        return hpaconversion.to_v2(obj)

    def from_storage(self, obj: Obj) -> Obj:
        return hpaconversion.to_v1(obj)

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        super().prepare_for_update(obj, old, ctx)  # keeps the stored status ...
        _carry(old, obj)  # ... and the status annotations with it

    def prepare_for_subresource(self, sub: str, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        new = dict(obj)
        super().prepare_for_subresource(sub, obj, old, ctx)  # keeps the stored spec and metadata ...
        if sub == "status":
            _carry(new, obj)  # ... but the status annotations are the status written

    def table_columns(self) -> list[Obj]:
        return self._v2.table_columns()

    def table_row(self, obj: Obj) -> list[Any]:
        return self._v2.table_row(hpaconversion.to_v2(obj))
