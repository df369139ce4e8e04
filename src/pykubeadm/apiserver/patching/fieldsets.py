"""Field sets in kube's `fieldsV1` form (structured-merge-diff's serialization), driven by the kind's OpenAPI schema;
used by managedfields.py for managedFields, server-side apply merges and conflicts.

A set is a nested dict keyed by path elements: `f:<field or map key>`, `k:{"name":"c"}` (an item of a list with
`x-kubernetes-list-type: map`, keys as compact JSON), `v:<json>` (an item of a `set` list), `i:<index>`. A node is a
member of the set when it is `{}` (a leaf) or carries `".": {}` (a member with members below it). Atomic lists and
maps (`x-kubernetes-map-type: atomic`, lists without a list type) are leaves.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "FieldSet",
    "Resolver",
    "changed_set",
    "diff_sets",
    "difference",
    "field_set",
    "format_path",
    "has_node",
    "intersect",
    "is_empty",
    "leaf_paths",
    "merge_apply",
    "remove_paths",
    "union",
    "value_at",
]

FieldSet = dict[str, Any]
Schema = dict[str, Any]
Resolver = Callable[[Schema], Schema]
_SELF = "."


#: id(schema) → (schema, kind, resolved): schemas are long-lived (definitions, a CRD strategy's); the entry keeps its
#: schema alive so the id cannot be reused for another object.
_KINDS: dict[tuple[int, int], tuple[Schema, str, Schema]] = {}


def _kind(schema: Schema, resolve: Resolver) -> tuple[str, Schema]:
    """('struct'|'map'|'list-map'|'set'|'atomic'|'scalar', resolved schema)."""
    key = (id(schema), id(resolve))
    hit = _KINDS.get(key)
    if hit is not None and hit[0] is schema:
        return hit[1], hit[2]
    kind, resolved = _classify(schema, resolve)
    if len(_KINDS) < 100_000:
        _KINDS[key] = (schema, kind, resolved)
    return kind, resolved


def _classify(schema: Schema, resolve: Resolver) -> tuple[str, Schema]:
    s = resolve(schema) if schema else {}
    if s.get("x-kubernetes-map-type") == "atomic" or s.get("x-kubernetes-list-type") == "atomic":
        return "atomic", s
    if s.get("x-kubernetes-int-or-string") or s.get("format") == "int-or-string":
        return "scalar", s
    t = s.get("type")
    if t == "array":
        lt = s.get("x-kubernetes-list-type")
        if lt == "map" and s.get("x-kubernetes-list-map-keys"):
            return "list-map", s
        if lt == "set":
            return "set", s
        if lt is None and s.get("x-kubernetes-patch-merge-key") and s.get("x-kubernetes-patch-strategy") == "merge":
            return "list-map", {**s, "x-kubernetes-list-map-keys": [s["x-kubernetes-patch-merge-key"]]}
        return "atomic", s
    if isinstance(s.get("properties"), dict):
        return "struct", s
    if t == "object" or isinstance(s.get("additionalProperties"), dict) or not s:
        return "map", s
    return "scalar", s


def _child_schema(s: Schema, name: str) -> Schema:
    props = s.get("properties")
    if isinstance(props, dict) and name in props:
        return props[name]
    addl = s.get("additionalProperties")
    return addl if isinstance(addl, dict) else {}


def _item_key(item: Any, s: Schema) -> str | None:
    if not isinstance(item, dict):
        return None
    keys = s.get("x-kubernetes-list-map-keys") or []
    present = {k: item[k] for k in sorted(keys) if k in item}
    if not present:
        return None
    return "k:" + json.dumps(present, separators=(",", ":"), sort_keys=True)


def _children(value: Any, schema: Schema, resolve: Resolver) -> Iterator[tuple[str, Any, Schema]] | None:
    """(path element, child value, child schema) of a granular value; None when the value is a leaf."""
    kind, s = _kind(schema, resolve)
    if kind in ("struct", "map") and isinstance(value, dict) and value:
        return ((f"f:{k}", v, _child_schema(s, k)) for k, v in value.items())
    if kind == "list-map" and isinstance(value, list) and value:
        items = s.get("items") or {}
        out = []
        for i, item in enumerate(value):
            key = _item_key(item, s)
            out.append((key or f"i:{i}", item, items))
        return iter(out)
    if kind == "set" and isinstance(value, list) and value:
        return iter([("v:" + json.dumps(v, separators=(",", ":")), v, {}) for v in value])
    return None


def field_set(value: Any, schema: Schema, resolve: Resolver) -> FieldSet:
    """structured-merge-diff's ToFieldSet: every leaf and every list item of `value` (an applied configuration)."""
    out: FieldSet = {}
    children = _children(value, schema, resolve)
    if children is None:
        return out
    for elem, v, sub in children:
        node = field_set(v, sub, resolve)
        if elem[0] in "kvi":
            node = {_SELF: {}, **node} if node else {}
        elif _children(v, sub, resolve) is None:
            node = {}
        elif not node:
            continue
        out[elem] = node
    return out


def changed_set(old: Any, new: Any, schema: Schema, resolve: Resolver) -> FieldSet:
    """The fields an update sets or changes (added ∪ modified): new leaves that differ from `old`, plus every map or
    list item that did not exist before (as a member with `.`). Struct fields are never members themselves."""
    out: FieldSet = {}
    children = _children(new, schema, resolve)
    if children is None:
        return out
    old_children = {e: v for e, v, _ in (_children(old, schema, resolve) or iter(()))}
    for elem, v, sub in children:
        existed = elem in old_children
        ov = old_children.get(elem)
        if _children(v, sub, resolve) is None:
            if not existed or ov != v:
                out[elem] = {}
            continue
        node = changed_set(ov if existed else None, v, sub, resolve)
        if not existed and (elem[0] in "kvi" or _kind(sub, resolve)[0] == "map"):
            node = {_SELF: {}, **node}
        if node:
            out[elem] = node
    return out


def diff_sets(old: Any, new: Any, schema: Schema, resolve: Resolver) -> tuple[FieldSet, FieldSet]:
    """(changed, removed) in one walk: `changed_set(old, new)` and the members of `old` that `new` no longer has."""
    changed: FieldSet = {}
    removed: FieldSet = {}
    new_children = _children(new, schema, resolve)
    old_children = {e: (v, sub) for e, v, sub in (_children(old, schema, resolve) or iter(()))}
    seen = set()
    for elem, v, sub in new_children or iter(()):
        seen.add(elem)
        existed = elem in old_children
        ov = old_children[elem][0] if existed else None
        if _children(v, sub, resolve) is None:
            if not existed or ov != v:
                changed[elem] = {}
            continue
        if existed and ov == v:
            continue
        c, r = diff_sets(ov if existed else None, v, sub, resolve)
        if not existed and (elem[0] in "kvi" or _kind(sub, resolve)[0] == "map"):
            c = {_SELF: {}, **c}
        if c:
            changed[elem] = c
        if r:
            removed[elem] = r
    for elem, (ov, sub) in old_children.items():
        if elem in seen:
            continue
        node = field_set(ov, sub, resolve)
        if elem[0] in "kvi" or _children(ov, sub, resolve) is None:
            node = {_SELF: {}, **node} if node else {}
        if node or elem[0] in "kvi":
            removed[elem] = node
    return changed, removed


def is_member(node: Any) -> bool:
    return isinstance(node, dict) and (not node or _SELF in node)


def union(a: FieldSet, b: FieldSet) -> FieldSet:
    out: FieldSet = {}
    for k in {**a, **b}:
        if k == _SELF:
            out[k] = {}
            continue
        x, y = a.get(k), b.get(k)
        if x is None or y is None:
            out[k] = _copy(x if y is None else y)
            continue
        merged = union(x, y)
        if (is_member(x) or is_member(y)) and merged:
            merged[_SELF] = {}
        out[k] = merged
    return _normalize(out)


def difference(a: FieldSet, b: FieldSet) -> FieldSet:
    """Members of `a` that are not members of `b`."""
    out: FieldSet = {}
    for k, x in a.items():
        if k == _SELF:
            continue
        y = b.get(k)
        if y is None:
            out[k] = _copy(x)
            continue
        rest = difference(x, y)
        keep_self = is_member(x) and not is_member(y)
        if keep_self:
            out[k] = {_SELF: {}, **rest} if rest else {}
        elif rest:
            out[k] = rest
    return out


def intersect(a: FieldSet, b: FieldSet) -> FieldSet:
    out: FieldSet = {}
    for k, x in a.items():
        if k == _SELF or k not in b:
            continue
        y = b[k]
        rest = intersect(x, y)
        if is_member(x) and is_member(y):
            out[k] = {_SELF: {}, **rest} if rest else {}
        elif rest:
            out[k] = rest
    return out


def _normalize(s: FieldSet) -> FieldSet:
    if list(s) == [_SELF]:
        return {}
    return s


def _copy(v: Any) -> Any:
    return {k: _copy(x) for k, x in v.items()} if isinstance(v, dict) else v


def is_empty(s: FieldSet) -> bool:
    return not s


def leaf_paths(s: FieldSet, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every member path of the set (members with children included), depth first."""
    for k, node in s.items():
        if k == _SELF:
            continue
        path = (*prefix, k)
        if is_member(node):
            yield path
        yield from leaf_paths(node, path)


def has_node(s: FieldSet, path: tuple[str, ...]) -> bool:
    """Whether the set names `path` or anything below it."""
    cur: Any = s
    for elem in path:
        if not isinstance(cur, dict) or elem not in cur:
            return False
        cur = cur[elem]
    return True


def format_path(path: tuple[str, ...]) -> str:
    """structured-merge-diff's Path.String(): `.spec.containers[name="c"].image`, `[=value]`, `[3]`."""
    out = []
    for elem in path:
        tag, rest = elem[0], elem[2:]
        if tag == "f":
            out.append("." + rest)
        elif tag == "k":
            keys = json.loads(rest)
            out.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]")
        elif tag == "v":
            out.append(f"[={rest}]")
        else:
            out.append(f"[{rest}]")
    return "".join(out)


def _find_item(items: list[Any], elem: str) -> int | None:
    tag, rest = elem[0], elem[2:]
    if tag == "i":
        i = int(rest)
        return i if i < len(items) else None
    want = json.loads(rest)
    for i, item in enumerate(items):
        if tag == "v" and item == want:
            return i
        if tag == "k" and isinstance(item, dict) and all(item.get(k) == v for k, v in want.items()):
            return i
    return None


def value_at(obj: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    cur = obj
    for elem in path:
        if elem.startswith("f:") and isinstance(cur, dict):
            if elem[2:] not in cur:
                return False, None
            cur = cur[elem[2:]]
        elif isinstance(cur, list):
            i = _find_item(cur, elem)
            if i is None:
                return False, None
            cur = cur[i]
        else:
            return False, None
    return True, cur


def remove_paths(obj: Any, paths: list[tuple[str, ...]]) -> None:
    """Delete each path (a field, map key or list item) from `obj`; a removed item takes its fields with it."""
    for path in sorted(paths, key=len):
        found, parent = value_at(obj, path[:-1])
        if not found:
            continue
        last = path[-1]
        if last.startswith("f:") and isinstance(parent, dict):
            parent.pop(last[2:], None)
        elif isinstance(parent, list):
            i = _find_item(parent, last)
            if i is not None:
                parent.pop(i)


def merge_apply(live: Any, config: Any, schema: Schema, resolve: Resolver) -> Any:
    """An applied configuration merged into the live object: maps and structs field by field, `map` lists item by
    key (live order, new items appended), `set` lists as a union, atomic values replaced."""
    kind, s = _kind(schema, resolve)
    if kind in ("struct", "map") and isinstance(live, dict) and isinstance(config, dict):
        out = dict(live)
        for k, v in config.items():
            out[k] = merge_apply(live.get(k), v, _child_schema(s, k), resolve) if k in live else _copy_value(v)
        return out
    if kind == "list-map" and isinstance(live, list) and isinstance(config, list):
        out_list = [_copy_value(x) for x in live]
        items = s.get("items") or {}
        for item in config:
            key = _item_key(item, s)
            idx = _find_item(out_list, key) if key else None
            if idx is None:
                out_list.append(_copy_value(item))
            else:
                out_list[idx] = merge_apply(out_list[idx], item, items, resolve)
        return out_list
    if kind == "set" and isinstance(live, list) and isinstance(config, list):
        return [*live, *(v for v in config if v not in live)]
    return _copy_value(config)


def _copy_value(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy_value(x) for x in v]
    return v
