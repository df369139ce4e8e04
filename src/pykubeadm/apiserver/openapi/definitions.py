"""Kubernetes v1.33's own API schemas, loaded once from the `kubernetes-validate` package and turned back into the
OpenAPI form kube-apiserver publishes (v2 `definitions`, v3 `components.schemas`); read by documents.py, fields.py
and the generic registry.

`kubernetes-validate` ships kube's OpenAPI definitions as JSON Schema (nullable `["string", "null"]` types, `$defs`
references, `oneOf` for IntOrString and Quantity) with every field's description, `x-kubernetes-group-version-kind`,
patch strategies and list-map keys intact; the conversion here undoes only the JSON-Schema packaging.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "KUBE_VERSION",
    "by_gvk",
    "definition",
    "definitions",
    "gvk_of",
    "resolve",
    "schema_for",
    "to_v3",
]

Schema = dict[str, Any]

#: The Kubernetes minor whose definitions are served.
KUBE_VERSION = "v1.33.0"
_SCHEMA_DIR = f"kubernetes-json-schema/{KUBE_VERSION}-local"
_REF_IN = "#/$defs/"
_REF_V2 = "#/definitions/"
_REF_V3 = "#/components/schemas/"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_SPECIAL_DESCRIPTIONS = {
    _INT_OR_STRING: "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling "
    "and unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON field "
    "that can accept a name or number.",
    _QUANTITY: "Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling "
    "in JSON and YAML, in addition to String() and AsInt64() accessors.",
}


def _package_dir() -> Path:
    # find_spec locates the package without importing it (its __init__ pulls in jsonschema, which we do not use).
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the kubernetes-validate package (Kubernetes' API schemas) is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _convert(node: Any) -> Any:
    """JSON Schema (kubernetes-validate) → kube's OpenAPI v2 schema form."""
    if isinstance(node, list):
        return [_convert(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: Schema = {}
    for k, v in node.items():
        if k == "type" and isinstance(v, list):
            real = [t for t in v if t != "null"]
            if real:
                out["type"] = real[0]
        elif k == "$ref" and isinstance(v, str):
            out["$ref"] = _REF_V2 + v.rsplit("/", 1)[-1]
        elif k in ("properties", "patternProperties", "definitions", "$defs") and isinstance(v, dict):
            out[k] = {name: _convert(sub) for name, sub in v.items()}
        else:
            out[k] = _convert(v)
    return out


@functools.cache
def _raw() -> dict[str, Any]:
    """The package's definitions as JSON Schema, by name (read once; converted one by one as they are asked for)."""
    raw: dict[str, Any] = orjson.loads((_package_dir() / _SCHEMA_DIR / "_definitions.json").read_bytes())["$defs"]
    return raw


@functools.cache
def definition(name: str) -> Schema | None:
    """One definition by its OpenAPI name (`io.k8s.api.core.v1.Pod`) in v2 form, or None. Converting only the
    definitions a request needs keeps the apiserver's start from converting all ~700 (its first write needs one)."""
    if name in _SPECIAL_DESCRIPTIONS:
        if name == _INT_OR_STRING:
            return {"description": _SPECIAL_DESCRIPTIONS[name], "type": "string", "format": "int-or-string"}
        return {"description": _SPECIAL_DESCRIPTIONS[name], "type": "string"}
    raw = _raw().get(name)
    if raw is None:
        return None
    schema: Schema = _convert(raw)
    props = schema.get("properties")
    if isinstance(props, dict) and schema.get("x-kubernetes-group-version-kind"):
        # kubernetes-validate pins apiVersion/kind with enums; kube's documents do not.
        for f in ("apiVersion", "kind"):
            if isinstance(props.get(f), dict):
                props[f].pop("enum", None)
    return schema


@functools.cache
def definitions() -> dict[str, Schema]:
    """Every definition by its OpenAPI name, in v2 form with `#/definitions/` refs (the same objects `definition`
    returns)."""
    defs: dict[str, Schema] = {}
    for name in [*_raw(), *_SPECIAL_DESCRIPTIONS]:
        schema = definition(name)
        if schema is not None:
            defs[name] = schema
    return defs


@functools.cache
def by_gvk() -> dict[tuple[str, str, str], str]:
    """(group, version, kind) → definition name, from each definition's x-kubernetes-group-version-kind."""
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in _raw().items():  # the conversion leaves these lists as they are
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            key = (gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))
            # meta kinds (DeleteOptions, WatchEvent) are listed under every group; keep the first, most specific.
            out.setdefault(key, name)
    return out


def gvk_of(group: str, version: str, kind: str) -> str | None:
    """The definition name of a built-in kind, or None."""
    return by_gvk().get((group, version, kind))


def schema_for(group: str, version: str, kind: str) -> Schema | None:
    name = gvk_of(group, version, kind)
    return definition(name) if name else None


def resolve(schema: Schema) -> Schema:
    """Follow a `$ref` (v2 form) or a single-element `allOf` to the referenced definition."""
    for _ in range(8):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = definition(ref.rsplit("/", 1)[-1])
            if target is None:
                return schema
            schema = target
            continue
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            schema = all_of[0]
            continue
        return schema
    return schema


def to_v3(node: Any) -> Any:
    """A v2-form schema → kube's OpenAPI v3 form: `#/components/schemas/` refs, a `$ref` with siblings wrapped in
    `allOf`, IntOrString as `x-kubernetes-int-or-string` and Quantity as a string-or-number `oneOf`."""
    if isinstance(node, list):
        return [to_v3(n) for n in node]
    if not isinstance(node, dict):
        return node
    if node.get("format") == "int-or-string" and node.get("type") == "string":
        out: Schema = {k: v for k, v in node.items() if k not in ("type", "format")}
        out["x-kubernetes-int-or-string"] = True
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        return out
    out = {}
    for k, v in node.items():
        if k == "$ref" and isinstance(v, str):
            continue
        if k in ("properties", "patternProperties") and isinstance(v, dict):
            out[k] = {name: to_v3(sub) for name, sub in v.items()}
        else:
            out[k] = to_v3(v)
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = _REF_V3 + ref.rsplit("/", 1)[-1]
        if out:
            out["allOf"] = [{"$ref": target}]
        else:
            out["$ref"] = target
    return out


def v3_definition(name: str) -> Schema:
    """One definition in v3 form (IntOrString and Quantity as kube's v3 documents spell them)."""
    if name == _INT_OR_STRING:
        return {
            "description": _SPECIAL_DESCRIPTIONS[_INT_OR_STRING],
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
        }
    if name == _QUANTITY:
        return {
            "description": _SPECIAL_DESCRIPTIONS[_QUANTITY],
            "oneOf": [{"type": "string"}, {"type": "number"}],
        }
    schema = definition(name)
    if schema is None:
        raise KeyError(name)
    return to_v3(schema)
