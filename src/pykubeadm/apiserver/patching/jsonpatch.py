"""RFC 6902 JSON patch (add, remove, replace, move, copy, test) with RFC 6901 pointers; `PatchError` → 422."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["PatchError", "apply_json_patch"]


class PatchError(Exception):
    """The patch does not apply to the object (→ 422); malformed patches raise ValueError (→ 400)."""


def _parse(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"JSON pointer must start with '/': {pointer!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]


def _index(container: list, token: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"invalid array index: {token}")
    i = int(token)
    if i > len(container) or (i == len(container) and not allow_end):
        raise PatchError(f"array index out of bounds: {i}")
    return i


def _walk(doc: Any, parts: list[str], op: str, path: str) -> Any:
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                raise PatchError(f"jsonpatch {op} operation does not apply: doc is missing path: {path}")
            cur = cur[p]
        elif isinstance(cur, list):
            cur = cur[_index(cur, p, False)]
        else:
            raise PatchError(f"jsonpatch {op} operation does not apply: doc is missing path: {path}")
    return cur


def _get(doc: Any, path: str, op: str) -> Any:
    return _walk(doc, _parse(path), op, path)


def _add(doc: Any, path: str, value: Any, op: str = "add") -> Any:
    parts = _parse(path)
    if not parts:
        return value
    parent = _walk(doc, parts[:-1], op, path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, True), value)
    else:
        raise PatchError(f"jsonpatch {op} operation does not apply: doc is missing path: {path}")
    return doc


def _remove(doc: Any, path: str, op: str = "remove") -> tuple[Any, Any]:
    parts = _parse(path)
    if not parts:
        raise PatchError("jsonpatch remove operation does not apply: cannot remove the whole document")
    parent = _walk(doc, parts[:-1], op, path)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"jsonpatch {op} operation does not apply: doc is missing key: {path}")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, False))
    raise PatchError(f"jsonpatch {op} operation does not apply: doc is missing path: {path}")


def apply_json_patch(doc: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise ValueError("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for o in ops:
        if not isinstance(o, dict) or "op" not in o or "path" not in o:
            raise ValueError(f"invalid json patch operation: {o!r}")
        op, path = o["op"], o["path"]
        if not isinstance(path, str):
            raise ValueError("path must be a string")
        if op == "add":
            doc = _add(doc, path, copy.deepcopy(o.get("value")))
        elif op == "remove":
            doc, _ = _remove(doc, path)
        elif op == "replace":
            parts = _parse(path)
            if parts:
                parent = _walk(doc, parts[:-1], op, path)
                if isinstance(parent, dict) and parts[-1] not in parent:
                    raise PatchError(f"jsonpatch replace operation does not apply: doc is missing key: {path}")
                doc, _ = _remove(doc, path, op)
            doc = _add(doc, path, copy.deepcopy(o.get("value")), op)
        elif op in ("move", "copy"):
            src = o.get("from")
            if not isinstance(src, str):
                raise ValueError(f"{op} operation requires 'from'")
            if op == "move":
                doc, value = _remove(doc, src, op)
            else:
                value = copy.deepcopy(_get(doc, src, op))
            doc = _add(doc, path, value, op)
        elif op == "test":
            if _get(doc, path, op) != o.get("value"):
                raise PatchError(f"testing value {path} failed")
        else:
            raise ValueError(f"Unexpected kind: {op}")
    return doc
