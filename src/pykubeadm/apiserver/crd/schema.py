"""Custom resources against their CRD's structural schema (openAPIV3Schema), as kube-apiextensions-apiserver does it:
defaulting (`default`), validation with kube's field paths and messages (type, enum, pattern, bounds, lengths, item
counts, required, x-kubernetes-int-or-string, nullable), and the printer-column JSONPath cells. Pruning of unknown
fields is the field validation every kind gets (openapi/fields.py), since a CR's schema is its OpenAPI definition.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pykubeadm.apiserver.status import Cause

__all__ = ["apply_defaults", "jsonpath_cell", "property_schema", "validate_custom"]

Obj = dict[str, Any]
_TYPE_NAMES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    return _TYPE_NAMES.get(type(v), "object")


def _shown(v: Any) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, dict | list):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _matches_type(v: Any, t: str) -> bool:
    return {
        "string": isinstance(v, str),
        "boolean": isinstance(v, bool),
        "integer": isinstance(v, int) and not isinstance(v, bool),
        "number": isinstance(v, int | float) and not isinstance(v, bool),
        "array": isinstance(v, list),
        "object": isinstance(v, dict),
    }.get(t, True)


def property_schema(schema: Obj, name: str) -> Obj | None:
    """The schema of an object's property `name`: its `properties` entry, else `additionalProperties`."""
    sub = (schema.get("properties") or {}).get(name)
    if sub is None:
        sub = schema.get("additionalProperties")
    return sub if isinstance(sub, dict) else None


def apply_defaults(value: Any, schema: Obj) -> None:
    """Set `default`s of absent properties (objects that exist only), recursively, as structural defaulting does."""
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name, sub in props.items():
            if name not in value and isinstance(sub, dict) and "default" in sub:
                value[name] = json.loads(json.dumps(sub["default"]))
        for name, v in value.items():
            sub = property_schema(schema, name)
            if sub is not None:
                apply_defaults(v, sub)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for v in value:
            apply_defaults(v, schema["items"])


def validate_custom(value: Any, schema: Obj, path: str = "") -> list[Cause]:
    """Every violation of `schema` in `value`, as `field: Invalid value: …` causes with kube's texts."""
    out: list[Cause] = []
    _validate(value, schema, path, out)
    return out


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {_shown(value)}: {detail}", path)


def _validate(v: Any, s: Obj, path: str, out: list[Cause]) -> None:
    if v is None:
        if s.get("nullable"):
            return
        if s.get("type") and path:
            out.append(_invalid(path, "null", f'{path} in body must be of type {s["type"]}: "null"'))
        return
    if s.get("x-kubernetes-int-or-string"):
        if not (isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))):
            t = _type_name(v)
            out.append(_invalid(path, t, f'{path} in body must be of type integer,string: "{t}"'))
            return
    elif s.get("type") and not _matches_type(v, s["type"]):
        t = _type_name(v)
        out.append(_invalid(path, t, f'{path} in body must be of type {s["type"]}: "{t}"'))
        return
    enum = s.get("enum")
    if isinstance(enum, list) and v not in enum:
        supported = ", ".join(_shown(e) for e in enum)
        out.append(
            Cause("FieldValueNotSupported", f"Unsupported value: {_shown(v)}: supported values: {supported}", path)
        )
    if isinstance(v, str):
        pattern = s.get("pattern")
        if isinstance(pattern, str) and not re.search(pattern, v):
            out.append(_invalid(path, v, f"{path} in body should match '{pattern}'"))
        if isinstance(s.get("minLength"), int) and len(v) < s["minLength"]:
            out.append(_invalid(path, v, f"{path} in body should be at least {s['minLength']} chars long"))
        if isinstance(s.get("maxLength"), int) and len(v) > s["maxLength"]:
            out.append(Cause("FieldValueTooLong", f"Too long: may not be more than {s['maxLength']} bytes", path))
    if isinstance(v, int | float) and not isinstance(v, bool):
        if "minimum" in s and (v < s["minimum"] or (s.get("exclusiveMinimum") and v == s["minimum"])):
            op = "greater than" if s.get("exclusiveMinimum") else "greater than or equal to"
            out.append(_invalid(path, v, f"{path} in body should be {op} {s['minimum']}"))
        if "maximum" in s and (v > s["maximum"] or (s.get("exclusiveMaximum") and v == s["maximum"])):
            op = "less than" if s.get("exclusiveMaximum") else "less than or equal to"
            out.append(_invalid(path, v, f"{path} in body should be {op} {s['maximum']}"))
    if isinstance(v, list):
        if isinstance(s.get("minItems"), int) and len(v) < s["minItems"]:
            out.append(_invalid(path, len(v), f"{path} in body should have at least {s['minItems']} items"))
        if isinstance(s.get("maxItems"), int) and len(v) > s["maxItems"]:
            out.append(Cause("FieldValueTooMany", f"Too many: {len(v)}: must have at most {s['maxItems']} items", path))
        items = s.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(v):
                _validate(item, items, f"{path}[{i}]", out)
    if isinstance(v, dict):
        for name in s.get("required") or []:
            if name not in v:
                out.append(Cause("FieldValueRequired", "Required value", f"{path}.{name}" if path else name))
        for name, child in v.items():
            sub = property_schema(s, name)
            if sub is not None:
                _validate(child, sub, f"{path}.{name}" if path else name, out)


_STEP = re.compile(r"\.([A-Za-z0-9_\-]+)|\[(\d+)\]|\[\?\(@\.([A-Za-z0-9_\-]+)==['\"]([^'\"]*)['\"]\)\]")


def jsonpath_cell(obj: Obj, expr: str) -> Any:
    """The value of a printer column's JSONPath (`.spec.replicas`, `.items[0]`, `[?(@.type=="Ready")]`), or None."""
    expr = expr.strip()
    if expr.startswith("{") and expr.endswith("}"):
        expr = expr[1:-1]
    cur: Any = obj
    pos = 0
    while pos < len(expr):
        m = _STEP.match(expr, pos)
        if m is None:
            return None
        pos = m.end()
        if m.group(1) is not None:
            cur = cur.get(m.group(1)) if isinstance(cur, dict) else None
        elif m.group(2) is not None:
            i = int(m.group(2))
            cur = cur[i] if isinstance(cur, list) and i < len(cur) else None
        else:
            key, want = m.group(3), m.group(4)
            cur = (
                next((x for x in cur if isinstance(x, dict) and str(x.get(key)) == want), None)
                if isinstance(cur, list)
                else None
            )
        if cur is None:
            return None
    return cur
