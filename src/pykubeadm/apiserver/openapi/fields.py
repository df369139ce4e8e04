"""Schema-driven decoding checks for request objects, as kube-apiserver's decoder makes them: unknown fields anywhere in
the object (reported as `unknown field "spec.template.spec.containers[0].foo"`, rejected with ?fieldValidation=Strict,
else dropped) and JSON values of the wrong type (`json: cannot unmarshal string into Go struct field
DeploymentSpec.spec.replicas of type int32`). Called by handlers/codec.field_validation for every kind with a schema.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pykubeadm.apiserver.openapi import definitions as defs

__all__ = ["DecodeReport", "check_object", "schema_of", "schema_report"]

Schema = dict[str, Any]
_INDEX = re.compile(r"\[\d+\]")
_JSON_TYPE = {str: "string", bool: "bool", int: "number", float: "number", list: "array", dict: "object"}


@dataclass
class DecodeReport:
    """What a walk found: unknown field paths (with where to drop them) and the first type error, if any."""

    unknown: list[str] = field(default_factory=list)
    drops: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    type_error: str | None = None

    def drop_unknown(self) -> None:
        for container, key in self.drops:
            container.pop(key, None)


def schema_of(strategy: Any) -> Schema | None:
    """The v2-form root schema of a served kind: its own (CRDs) or the built-in v1.33 definition."""
    custom = getattr(strategy, "openapi_definition", None)
    if callable(custom):
        return custom()[1]
    return defs.schema_for(strategy.group, strategy.version, strategy.kind)


def _ref_name(schema: Schema) -> str | None:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1]
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        return _ref_name(all_of[0])
    return None


def _go_type(schema: Schema, version: str) -> str:
    name = _ref_name(schema)
    if name:
        target = defs.definition(name) or {}
        if target.get("type") in ("object", None) and "format" not in target:
            return f"{version}.{name.rsplit('.', 1)[-1]}"
        schema = target
    t = schema.get("type")
    if t == "integer":
        return str(schema.get("format") or "int64")
    if t == "boolean":
        return "bool"
    if t == "number":
        return "float64"
    if t == "array":
        return "[]" + _go_type(schema.get("items") or {}, version)
    if t == "object" and isinstance(schema.get("additionalProperties"), dict):
        return "map[string]" + _go_type(schema["additionalProperties"], version)
    return str(t or "interface {}")


class _Walker:
    def __init__(self, report: DecodeReport, version: str, local: dict[str, Schema] | None) -> None:
        self.report = report
        self.version = version
        self.local = local or {}

    def resolve(self, schema: Schema, struct: str) -> tuple[Schema, str]:
        for _ in range(8):
            name = _ref_name(schema)
            if name is None:
                return schema, struct
            target = self.local.get(name) or defs.definition(name)
            if target is None:
                return {}, struct
            schema, struct = target, name.rsplit(".", 1)[-1]
        return schema, struct

    def type_error(self, value: Any, schema: Schema, path: str, struct: str) -> None:
        if self.report.type_error is None:
            jt = _JSON_TYPE.get(type(value), "value")
            dotted = _INDEX.sub("", path)
            self.report.type_error = (
                f"json: cannot unmarshal {jt} into Go struct field {struct}.{dotted} of type "
                f"{_go_type(schema, self.version)}"
            )

    def walk(self, value: Any, schema: Schema, path: str, struct: str) -> None:
        if value is None:
            return
        original = schema
        schema, struct = self.resolve(schema, struct)
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return
        if schema.get("x-kubernetes-int-or-string") or schema.get("format") == "int-or-string":
            if not isinstance(value, (int, str)) or isinstance(value, bool):
                self.type_error(value, original, path, struct)
            return
        if "oneOf" in schema or "anyOf" in schema:
            return
        t = schema.get("type")
        props = schema.get("properties")
        if t == "object" or isinstance(props, dict):
            if not isinstance(value, dict):
                self.type_error(value, original, path, struct)
                return
            addl = schema.get("additionalProperties")
            if isinstance(props, dict):
                for k, v in value.items():
                    sub = props.get(k)
                    child = f"{path}.{k}" if path else k
                    if sub is not None:
                        self.walk(v, sub, child, struct)
                    elif isinstance(addl, dict):
                        self.walk(v, addl, child, struct)
                    elif addl is not True:
                        self.report.unknown.append(child)
                        self.report.drops.append((value, k))
            elif isinstance(addl, dict):
                for k, v in value.items():
                    self.walk(v, addl, f"{path}.{k}" if path else k, struct)
            return
        if t == "array":
            if not isinstance(value, list):
                self.type_error(value, original, path, struct)
                return
            items = schema.get("items")
            if isinstance(items, dict):
                for i, v in enumerate(value):
                    self.walk(v, items, f"{path}[{i}]", struct)
            return
        ok = {
            "string": isinstance(value, str),
            "boolean": isinstance(value, bool),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        }.get(str(t), True)
        if not ok:
            if t == "integer" and isinstance(value, float) and value.is_integer():
                return
            self.type_error(value, original, path, struct)


def check_object(
    obj: dict[str, Any], root: Schema, version: str, local: dict[str, Schema] | None = None
) -> DecodeReport:
    """Walk `obj` against `root` (v2 form); `local` adds definitions a CRD's schema refers to."""
    report = DecodeReport()
    walker = _Walker(report, version, local)
    root_struct = ""
    for gvk in root.get("x-kubernetes-group-version-kind") or []:
        root_struct = gvk.get("kind", "")
    walker.walk(obj, root, "", root_struct)
    # kubectl sends maps with sorted keys, so kube reports them in this order.
    report.unknown.sort()
    return report


def schema_report(strategy: Any, obj: Any) -> DecodeReport | None:
    """`check_object` for a served kind, or None when the kind has no schema (then only its top fields are known)."""
    if not isinstance(obj, dict):
        return None
    root = schema_of(strategy)
    if root is None:
        return None
    local = getattr(strategy, "openapi_local_definitions", None)
    report = check_object(obj, root, strategy.version, local() if callable(local) else None)
    if getattr(strategy, "custom", False):
        report.type_error = None  # custom resources are decoded untyped; their schema validation reports types
    return report
