"""Untrusted JSON and YAML request bodies → plain JSON values, refused the way kube-apiserver's decoders refuse them
(400 with their messages), never a 500. Used by handlers/codec.py for every body the apiserver reads.

- Nesting: Go's encoding/json stops at depth 10 000 (`invalid character '[' exceeded max depth`), go-yaml at 10 000
  flow or block levels (`yaml: exceeded max depth of 10000`). Shallower documents parse (orjson for ≤ 1 024 levels,
  the standard library with enough recursion head-room beyond).
- Strings: invalid UTF-8 and lone UTF-16 surrogates become U+FFFD, as Go's decoder does.
- Numbers: integers beyond int64 become floats and non-finite numbers are refused, as sigs.k8s.io/json does into
  `interface{}`; `NaN`/`Infinity` literals are not JSON.
- Duplicate keys: reported as `duplicate field "<path>"` (the Strict/Warn field validation of kube 1.33 decides
  what to do with them); the last value wins, as in Go.
- YAML: only JSON-compatible values (keys become strings, timestamps stay text, sets become maps), as
  sigs.k8s.io/yaml's YAMLToJSON produces.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import functools
import itertools
import json
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from pykubeadm.apiserver import status as st

__all__ = ["MAX_DEPTH", "Parsed", "parse_json", "parse_yaml", "sanitize"]

#: Go's encoding/json maxNestingDepth and go-yaml's max_flow_level / max_indents.
MAX_DEPTH = 10_000
_INT64 = (-(2**63), 2**63 - 1)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"(\s*:)?')
_BRACKETS = bytes(range(256)).translate(None, b"[]{}")  # every byte but the brackets: deleted before counting
_DEPTH_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class Parsed:
    """A decoded body and the duplicate keys found in it (paths like `metadata.name`, `spec.containers[0].image`)."""

    value: Any
    duplicates: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _recursion_headroom(levels: int) -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, levels))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _json_depth_error(data: bytes) -> st.ApiError | None:
    """Go's scanner error when `data` nests deeper than MAX_DEPTH (brackets inside strings do not count)."""
    stripped = _STRING.sub(b'""', data).translate(None, _BRACKETS)
    if len(stripped) <= MAX_DEPTH:
        return None
    steps = memoryview(stripped.translate(_DEPTH_STEP)).cast("b")
    depths = list(itertools.accumulate(steps))
    if max(depths) <= MAX_DEPTH:
        return None
    char = chr(stripped[depths.index(MAX_DEPTH + 1)])
    return st.bad_request(f"couldn't get version/kind; json parse error: invalid character '{char}' exceeded max depth")


def _reject_constant(name: str) -> Any:
    if name.startswith("-"):
        raise ValueError(f"invalid character '{name[1]}' in numeric literal")
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def _go_float(text: str) -> float:
    return _float(float(text), text)


def _pairs_with_duplicates(dups: list[tuple[int, str]]) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                dups.append((id(out), k))
            out[k] = v
        return out

    return hook


def _key_count(value: Any) -> int:
    n, stack = 0, [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            n += len(v)
            stack.extend(x for x in v.values() if isinstance(x, dict | list))
        elif isinstance(v, list):
            stack.extend(x for x in v if isinstance(x, dict | list))
    return n


def _duplicate_paths(data: bytes) -> list[str]:
    """The paths of repeated keys, found by re-reading the text with a pairs hook (only when a count says so)."""
    found: list[tuple[int, str]] = []
    with _recursion_headroom(3 * MAX_DEPTH):
        tree = json.loads(_text(data), object_pairs_hook=_pairs_with_duplicates(found), parse_constant=_reject_constant)
    owners = {oid for oid, _ in found}
    paths: dict[int, str] = {}
    stack: list[tuple[Any, str]] = [(tree, "")]
    while stack:
        v, path = stack.pop()
        if isinstance(v, dict):
            if id(v) in owners:
                paths[id(v)] = path
            stack.extend((x, f"{path}.{k}" if path else k) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, f"{path}[{i}]") for i, x in enumerate(v))
    return [f"{paths[oid]}.{k}" if paths.get(oid) else k for oid, k in found]


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")  # Go: invalid UTF-8 in strings becomes U+FFFD


def parse_json(data: bytes) -> Parsed:
    """A JSON body → Parsed; ApiError 400 with Go's wording for what kube's decoder refuses."""
    try:
        value = orjson.loads(data)  # fast path: valid UTF-8, ≤ 1 024 levels, int64/float64 numbers
        fast = True
    except orjson.JSONDecodeError:
        fast = False
    if not fast:
        err = _json_depth_error(data)
        if err is not None:
            raise err
        try:
            with _recursion_headroom(3 * MAX_DEPTH):
                value = json.loads(_text(data), parse_float=_go_float, parse_constant=_reject_constant)
        except ValueError as e:
            raise st.bad_request(f"couldn't get version/kind; json parse error: {e}") from None
        value = sanitize(value)
    dups: list[str] = []
    if isinstance(value, dict | list) and _may_have_duplicates(data, value):
        dups = _duplicate_paths(data)
    return Parsed(value, dups)


def _may_have_duplicates(data: bytes, value: Any) -> bool:
    """False only when `data` certainly has no repeated key: every colon of the text is accounted for by the keys and
    the string contents of the decoded value (its compact re-encoding), and no \\u escape could hide one."""
    if b"\\u" in data:
        return _keys_in_text(data) != _key_count(value)
    try:
        decoded_colons = orjson.dumps(value).count(b":")
    except TypeError:
        return _keys_in_text(data) != _key_count(value)
    return data.count(b":") > decoded_colons


def _keys_in_text(data: bytes) -> int:
    return sum(1 for m in _STRING.finditer(data) if m.group(1))


def _set_libyaml_max_depth() -> None:
    """libyaml refuses collections nested deeper than its max nest level (1 000 by default); go-yaml's is 10 000.
    PyYAML does not expose the setter, so it is called in PyYAML's extension, which links libyaml statically."""
    import ctypes

    import yaml._yaml as _cyaml

    # An older libyaml has no limit (and no setter): the RecursionError guard in parse_yaml remains.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(_cyaml.__file__).yaml_set_max_nest_level(MAX_DEPTH)


@functools.cache
def _json_compatible_loader() -> type[Any]:
    """libyaml's safe loader that keeps timestamps as the text they were written as (go-yaml into interface{} does).
    Made on the first YAML body: PyYAML is not imported at every apiserver start for the few clients that send YAML."""
    import yaml

    class _JSONCompatibleLoader(yaml.CSafeLoader):
        pass

    _JSONCompatibleLoader.yaml_implicit_resolvers = {
        ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for ch, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
    }
    _set_libyaml_max_depth()
    return _JSONCompatibleLoader


def parse_yaml(data: bytes) -> Parsed:
    """A YAML body (one document) → Parsed, as sigs.k8s.io/yaml's YAMLToJSON would see it; 400 on what it refuses.

    JSON text (what kubectl's server-side apply sends as apply-patch+yaml) takes the JSON path."""
    if not data.strip():
        return Parsed(None)
    if data.lstrip()[:1] in (b"{", b"["):
        try:
            return parse_json(data)
        except st.ApiError:
            pass  # YAML flow syntax that is not JSON: the YAML parser decides
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise st.bad_request(f"error converting YAML to JSON: yaml: invalid leading UTF-8 octet at {e.start}") from None
    loader = _json_compatible_loader()
    import yaml

    try:
        value = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as e:
        # Only the position and the problem: the YAML library's snippet of the document could be secret data.
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None and mark.line else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        if "maximum nesting depth" in problem:
            problem = f"exceeded max depth of {MAX_DEPTH}"
        raise st.bad_request(f"error converting YAML to JSON: yaml: {where}{problem}") from None
    except RecursionError:
        raise st.bad_request(f"error converting YAML to JSON: yaml: exceeded max depth of {MAX_DEPTH}") from None
    return Parsed(sanitize(value))


def _json_key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if k is None:
        return "null"
    if isinstance(k, bool):
        return "true" if k else "false"
    if isinstance(k, float) and k.is_integer():
        return str(int(k))
    if isinstance(k, dt.date | dt.datetime):
        return k.isoformat()
    if isinstance(k, tuple):
        raise st.bad_request("error converting YAML to JSON: yaml: invalid map key: a sequence")
    return str(k)


def _scalar(v: Any) -> Any:
    if isinstance(v, str):
        return _SURROGATE.sub("\ufffd", v) if _SURROGATE.search(v) else v
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        if _INT64[0] <= v <= _INT64[1]:
            return v
        try:
            return float(v)  # sigs.k8s.io/json: an integer beyond int64 is a float64
        except OverflowError:
            raise st.bad_request("json: cannot unmarshal number into Go value of type float64") from None
    if isinstance(v, float):
        return _float(v, repr(v))
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, dt.date | dt.datetime):
        return v.isoformat()
    return str(v)


def _float(f: float, text: str) -> float:
    if not math.isfinite(f):
        raise st.bad_request(f"json: cannot unmarshal number {text} into Go value of type float64")
    return f


def sanitize(value: Any) -> Any:
    """A decoded tree made JSON-safe in place of Go's rules (see the module docstring); iterative, any depth."""
    if not isinstance(value, dict | list | set):
        return _scalar(value)
    root: list[Any] = [value]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]  # (parent, key in parent, node)
    while stack:
        parent, key, node = stack.pop()
        if isinstance(node, set):
            node = dict.fromkeys(node)
            parent[key] = node
        if isinstance(node, dict):
            if not all(type(k) is str for k in node):
                node = {_json_key(k): v for k, v in node.items()}
                parent[key] = node
            if any(_SURROGATE.search(k) for k in node):
                node = {_scalar(k): v for k, v in node.items()}
                parent[key] = node
            for k, v in node.items():
                if isinstance(v, dict | list | set):
                    stack.append((node, k, v))
                elif type(v) is not str or _SURROGATE.search(v):
                    node[k] = _scalar(v)
        else:
            for i, v in enumerate(node):
                if isinstance(v, dict | list | set):
                    stack.append((node, i, v))
                elif type(v) is not str or _SURROGATE.search(v):
                    node[i] = _scalar(v)
    return root[0]
