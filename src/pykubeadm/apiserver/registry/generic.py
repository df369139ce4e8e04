"""The generic registry: a kind served from data (a `KindSpec`: names, scope, subresources, kube's printer columns,
defaults) plus its v1.33 OpenAPI schema (required fields), for kinds that need no code of their own. Kinds that behave
specially keep their own Strategy subclass; the table of generic kinds is builtin_kinds.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pykubeadm.apiserver.openapi import definitions as defs
from pykubeadm.apiserver.printing import NAME_COL, age, col
from pykubeadm.apiserver.registry.base import EIGHT_VERBS, Obj, RequestContext, Strategy, required
from pykubeadm.apiserver.registry.podspec import default_pod_spec
from pykubeadm.apiserver.status import Cause

__all__ = ["Column", "GenericStrategy", "KindSpec", "age_column", "deep_defaults", "validate_required"]

Cell = Callable[[Obj], Any]


@dataclass(frozen=True)
class Column:
    """One printer column: header, Table type, the cell function, kube's description and priority (1 = -o wide)."""

    name: str
    cell: Cell
    type: str = "string"
    description: str = ""
    priority: int = 0


def age_column() -> Column:
    return Column(
        "Age",
        age,
        description="CreationTimestamp is a timestamp representing the server time when this object was created.",
    )


@dataclass(frozen=True)
class KindSpec:
    kind: str
    plural: str
    group: str = ""
    version: str = "v1"
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    #: Columns after NAME; empty = kube's default table (Name, Created At).
    columns: tuple[Column, ...] = ()
    #: Defaults merged into new and updated objects (only keys that are absent), as kube's SetDefaults_* do.
    defaults: Obj = field(default_factory=dict)
    #: Dotted paths of pod templates whose pod spec gets the pod defaults (e.g. "spec.template").
    pod_templates: tuple[str, ...] = ()
    track_generation: bool = False
    field_labels: tuple[str, ...] = ()
    default_status: Obj | None = None
    verbs: tuple[str, ...] = EIGHT_VERBS
    #: Kind-specific defaulting after `defaults` (kube's SetDefaults_<Kind> where it is more than absent keys).
    mutate: Callable[[Obj], None] | None = None
    #: The NAME cell, when kube decorates it (StorageClass: `standard (default)`).
    name_cell: Cell | None = None
    #: DELETE answers the deleted object (kube's ReturnDeletedObject).
    return_deleted_object: bool = False
    validate_extra: Callable[[Obj], list[Cause]] | None = None


def deep_defaults(obj: Obj, defaults: Obj) -> None:
    """Fill absent keys of `obj` from `defaults`, recursing into nested maps present on both sides."""
    for k, v in defaults.items():
        if k not in obj or obj[k] is None:
            obj[k] = _copy(v)
        elif isinstance(v, dict) and isinstance(obj[k], dict):
            deep_defaults(obj[k], v)


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def validate_required(value: Any, schema: Obj, path: str, out: list[Cause], depth: int = 0) -> None:
    """`<path>: Required value` for every field the schema lists as required and the object lacks."""
    if depth > 24 or not isinstance(value, dict | list):
        return
    schema = defs.resolve(schema)
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(value):
                validate_required(v, items, f"{path}[{i}]", out, depth + 1)
        return
    props = schema.get("properties")
    if not isinstance(props, dict):
        return
    for name in schema.get("required") or []:
        if name in ("apiVersion", "kind", "metadata") and not path:
            continue
        v = value.get(name)
        if v is None or (v == "" and defs.resolve(props.get(name, {})).get("type") == "string"):
            out.append(required(f"{path}.{name}" if path else name))
    for name, v in value.items():
        sub = props.get(name)
        if sub is not None and name != "metadata":
            validate_required(v, sub, f"{path}.{name}" if path else name, out, depth + 1)


def _at(obj: Obj, dotted: str) -> Any:
    cur: Any = obj
    for part in dotted.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


class GenericStrategy(Strategy):
    """A Strategy whose facts come from a KindSpec instead of class attributes."""

    def __init__(self, spec: KindSpec) -> None:
        self.spec = spec
        self.kind = spec.kind
        self.plural = spec.plural
        self.group = spec.group
        self.version = spec.version
        self.namespaced = spec.namespaced
        self.short_names = spec.short_names
        self.categories = spec.categories
        self.subresources = spec.subresources
        self.track_generation = spec.track_generation
        self.field_labels = spec.field_labels
        self.verbs = spec.verbs
        self.return_deleted_object = spec.return_deleted_object

    def default_status(self) -> Obj | None:
        return _copy(self.spec.default_status) if self.spec.default_status is not None else None

    def _defaults(self, obj: Obj) -> None:
        if self.spec.defaults:
            deep_defaults(obj, self.spec.defaults)
        if self.spec.mutate is not None:
            self.spec.mutate(obj)
        for path in self.spec.pod_templates:
            tmpl = _at(obj, path)
            if isinstance(tmpl, dict):
                tmpl.setdefault("metadata", {})
                if isinstance(tmpl.get("spec"), dict):
                    default_pod_spec(tmpl["spec"])

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        super().prepare_for_create(obj, ctx)
        self._defaults(obj)

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        super().prepare_for_update(obj, old, ctx)
        self._defaults(obj)

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        causes: list[Cause] = []
        schema = defs.schema_for(self.group, self.version, self.kind)
        if schema is not None:
            validate_required(obj, schema, "", causes)
        if self.spec.validate_extra is not None:
            causes += self.spec.validate_extra(obj)
        return causes

    def table_columns(self) -> list[Obj]:
        if not self.spec.columns:
            return super().table_columns()
        return [NAME_COL, *(col(c.name, c.type, c.description, c.priority) for c in self.spec.columns)]

    def table_row(self, obj: Obj) -> list[Any]:
        if not self.spec.columns:
            return super().table_row(obj)
        name = self.spec.name_cell(obj) if self.spec.name_cell else obj.get("metadata", {}).get("name", "")
        return [name, *(c.cell(obj) for c in self.spec.columns)]
