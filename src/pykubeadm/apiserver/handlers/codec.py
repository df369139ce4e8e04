"""Request decoding and response encoding shared by the verb handlers: JSON/YAML/protobuf bodies (parsed by
bodyparse with kube's limits; bodies are read as sent, never decompressed, as kube-apiserver reads them), field
validation (unknown and duplicate fields), query parameters, the transforms an Accept header can ask for (`as=Table` for
`kubectl get`, `as=PartialObjectMetadata[List]` for metadata-only clients), and JSON responses.
"""

from __future__ import annotations

from typing import Any, TypeVar

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers import bodyparse
from pykubeadm.apiserver.openapi.fields import schema_report
from pykubeadm.apiserver.registry.base import Obj, Strategy
from pykubeadm.util import jsoncodec

__all__ = ["decode_body", "encode_json", "go_escape", "json_response", "query_bool", "query_int", "transform_of"]

MAX_BODY = 3 * 1024 * 1024
PROTOBUF = "application/vnd.kubernetes.protobuf"
_ACCEPTED = ["application/json", "application/yaml", PROTOBUF]


_GO_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"))
_GO_LINE_SEPS = ((b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))


def go_escape(data: bytes) -> bytes:
    """What Go's encoding/json does to JSON text: `<`, `>`, `&`, U+2028 and U+2029 as \\u escapes (they can only
    occur inside strings, so a byte replacement is exact)."""
    for raw, esc in _GO_ESCAPES:
        if raw in data:
            data = data.replace(raw, esc)
    if b"\xe2\x80" in data:
        for raw, esc in _GO_LINE_SEPS:
            data = data.replace(raw, esc)
    return data


def _go_order(obj: dict[str, Any]) -> dict[str, Any]:
    """Go struct order for an object's top level: kind, apiVersion, metadata first, status last."""
    if next(iter(obj), None) == "kind" and ("status" not in obj or next(reversed(obj)) == "status"):
        return obj
    out: dict[str, Any] = {k: obj[k] for k in ("kind", "apiVersion", "metadata") if k in obj}
    out.update((k, v) for k, v in obj.items() if k not in out and k != "status")
    if "status" in obj:
        out["status"] = obj["status"]
    return out


def encode_json(obj: Any) -> bytes:
    """A response body as kube-apiserver's JSON serializer writes it (json.Encoder.Encode: compact, ends with `\\n`;
    kind/apiVersion/metadata first as Go's struct order puts them)."""
    if isinstance(obj, dict) and "kind" in obj and obj["kind"] != "Status":
        obj = _go_order(obj)
        items = obj.get("items")
        if isinstance(items, list) and items and isinstance(items[0], dict) and "metadata" in items[0]:
            obj["items"] = [_go_order(i) if isinstance(i, dict) else i for i in items]
    return go_escape(jsoncodec.dumps(obj)) + b"\n"


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        body=encode_json(obj),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def query_bool(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("true", "1")


def query_int(request: web.Request, name: str, default: int = 0) -> int:
    raw = request.query.get(name)
    if raw in (None, ""):
        return default
    try:
        return int(raw)
    except ValueError:
        raise st.bad_request(f'invalid value for {name}: "{raw}": must be an integer') from None


def media_type(request: web.Request) -> str:
    ct = request.headers.get("Content-Type", "")
    return ct.split(";", 1)[0].strip().lower()


async def read_raw(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise st.ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY}")
    data = bytearray()
    try:  # StreamReader.read(n) returns what has arrived so far: read until EOF or past the limit
        while len(data) <= MAX_BODY and (chunk := await request.content.read(MAX_BODY + 1 - len(data))):
            data += chunk
    except Exception as e:
        raise st.bad_request(f"unable to read the request body: {e}") from None
    if len(data) > MAX_BODY:
        raise st.ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY}")
    body = request[RAW_BODY_KEY] = bytes(data)  # the audit log's requestObject reads it
    return body


#: The request body as read (set by read_raw).
RAW_BODY_KEY = web.RequestKey("raw_body", bytes)


#: Duplicate keys found in the request body (paths), for field validation.
DUPLICATES_KEY = web.RequestKey("duplicate_fields", list)


def parse_json_or_yaml(data: bytes, mt: str, request: web.Request | None = None) -> Any:
    """A JSON or YAML body (kube's decoders' limits and messages: handlers/bodyparse.py); records duplicate keys on
    `request` for field_validation."""
    if mt in ("application/yaml", "application/apply-patch+yaml"):
        parsed = bodyparse.parse_yaml(data)
    elif not data.strip():
        return None
    else:
        parsed = bodyparse.parse_json(data)
    if request is not None and parsed.duplicates:
        request[DUPLICATES_KEY] = parsed.duplicates
    return parsed.value


async def decode_body(request: web.Request, expect_kind: str, expect_api_version: str) -> Obj:
    """The request object as a JSON dict, checked against the kind the URL expects."""
    data = await read_raw(request)
    mt = media_type(request)
    if mt in ("", "application/json", "*/*", "application/yaml", "text/plain"):
        obj = parse_json_or_yaml(data, mt, request)
        if b"null" in data or b"~" in data or mt == "application/yaml":
            obj = drop_nulls(obj)
    elif mt == PROTOBUF:
        obj = decode_protobuf_body(data)
    else:
        raise st.unsupported_media_type(mt, _ACCEPTED)
    if not isinstance(obj, dict):
        raise st.bad_request("Object 'Kind' is missing in the request body; the body must be an object")
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if kind and kind != expect_kind:
        raise st.bad_request(
            f'{kind} in version "{api_version or ""}" cannot be handled as a {expect_kind}: '
            f"the object kind does not match the resource"
        )
    if api_version and api_version != expect_api_version:
        raise st.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version ({expect_api_version})"
        )
    for key in ("spec", "status"):  # structs in every built-in kind, reviews included
        value = obj.get(key)
        if value is not None and not isinstance(value, dict):
            raise st.bad_request(
                f'{expect_kind} in version "{expect_api_version.rpartition("/")[2]}" cannot be handled as a '
                f"{expect_kind}: json: cannot unmarshal {_json_type(value)} into Go struct field {expect_kind}.{key} "
                f"of type {expect_api_version.rpartition('/')[2]}.{expect_kind}{key.capitalize()}"
            )
    meta = obj.get("metadata")
    if meta is None and "metadata" in obj:
        obj["metadata"] = {}  # JSON null is Go's zero ObjectMeta
    elif meta is not None and not isinstance(meta, dict):
        raise st.bad_request("metadata must be an object")
    return obj


def _json_type(value: Any) -> str:
    """Go's name for a JSON value's type in `json: cannot unmarshal <type> into …`."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), "value")


def drop_nulls(obj: Any) -> Any:
    """Remove `null` members at any depth: decoding null into a Go struct field leaves its zero value, which the
    typed object then omits (lists keep their elements; a null element decodes to the element's zero value)."""
    stack = [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k in [k for k, v in node.items() if v is None]:
                del node[k]
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, dict | list))
    return obj


def decode_protobuf_body(data: bytes) -> Any:
    """A `k8s\\0` protobuf body as JSON values; malformed input (truncated, wrong wire types, values no JSON can
    hold) is the client's error: 400, as kube's protobuf serializer answers."""
    from pykubeadm.apiserver.proto import decode_protobuf

    try:
        obj = decode_protobuf(data)
    except st.ApiError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError, UnicodeError) as e:
        raise st.bad_request(f"unable to decode the protobuf body: {type(e).__name__}") from None
    return bodyparse.sanitize(obj)


META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers",
    "managedFields",
})  # fmt: skip


def field_validation(request: web.Request, strategy: Strategy, obj: Obj) -> list[str]:
    """Unknown top-level and metadata fields: 400 with ?fieldValidation=Strict, else dropped (with a warning unless
    Ignore), as kube-apiserver's decoder does. Returns the warnings to send."""
    mode = request.query.get("fieldValidation", "Warn") or "Warn"
    if mode not in ("Ignore", "Warn", "Strict"):
        raise st.bad_request(f'fieldValidation must be one of "Ignore", "Warn", "Strict"; got "{mode}"')
    problems = [f'duplicate field "{d}"' for d in request.get(DUPLICATES_KEY, ())]
    unknown: list[str] = []
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    report = schema_report(strategy, obj)  # the kind's OpenAPI schema, nested fields and value types
    if report is not None and report.type_error:
        raise st.bad_request(
            f'{strategy.kind} in version "{strategy.version}" cannot be handled as a {strategy.kind}: {report.type_error}'
        )
    if report is not None:
        unknown = report.unknown
    elif strategy.top_fields and isinstance(obj, dict):
        unknown = [k for k in obj if k not in strategy.top_fields and k not in ("apiVersion", "kind", "metadata")]
        if isinstance(meta, dict):
            unknown += [f"metadata.{k}" for k in meta if k not in META_FIELDS]
    problems += [f'unknown field "{u}"' for u in unknown]
    if not problems:
        return []
    if mode == "Strict":
        raise st.bad_request(
            f'{strategy.kind} in version "{strategy.version}" cannot be handled as a {strategy.kind}: '
            "strict decoding error: " + ", ".join(problems)
        )
    if report is not None:
        report.drop_unknown()
    for u in [] if report is not None else unknown:
        if u.startswith("metadata.") and isinstance(meta, dict):
            meta.pop(u[len("metadata.") :], None)
        else:
            obj.pop(u, None)
    return [] if mode == "Ignore" else problems


_HEADER_CONTROLS = {i: " " for i in (*range(0x20), 0x7F)}

_Resp = TypeVar("_Resp", bound=web.StreamResponse)


def add_warnings(resp: _Resp, warnings: list[str]) -> _Resp:
    """`Warning: 299 - "<text>"` headers; control characters (a field name from the body may carry them) become
    spaces, as Go's header writer turns CR and LF into spaces."""
    for w in warnings:
        text = w.translate(_HEADER_CONTROLS).replace("\\", "\\\\").replace('"', '\\"')
        resp.headers.add("Warning", '299 - "' + text + '"')
    return resp


TABLE = "Table"
PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"
#: The `as=` kinds each endpoint can answer with (kube's endpoint restrictions: a list converts to a Table or a
#: PartialObjectMetadataList, one object or a watch event to a Table or a PartialObjectMetadata).
_TRANSFORMS = {"get": (TABLE, PARTIAL), "watch": (TABLE, PARTIAL), "list": (TABLE, PARTIAL_LIST)}
_PLAIN_TYPES = frozenset({"application/json", "application/yaml", "application/*", "*/*"})


def transform_of(request: web.Request, endpoint: str) -> str:
    """The kind the answer is transformed to ("" for the object itself): the first media type of the Accept header
    this endpoint can write, as kube-apiserver negotiates it. An `as=` kind of another group or version, or one the
    endpoint cannot convert to (a PartialObjectMetadataList for a single object), is passed over for the next; when
    nothing is left, 406 NotAcceptable."""
    accept = request.headers.get("Accept", "")
    if "as=" not in accept:
        return ""
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        as_kind = params.get("as", "")
        if not as_kind:
            if fields[0].lower() in _PLAIN_TYPES or fields[0].lower() == PROTOBUF:
                return ""
            continue
        if params.get("g") == "meta.k8s.io" and params.get("v") == "v1" and as_kind in _TRANSFORMS[endpoint]:
            return as_kind
    raise st.ApiError(
        406, "NotAcceptable", f"only the following media types are accepted: {', '.join(_ACCEPTED)}", None
    )


def partial_metadata(obj: Obj) -> Obj:
    """A PartialObjectMetadata: the object's metadata only (kube's meta.AsPartialObjectMetadata)."""
    return {"kind": PARTIAL, "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def partial_metadata_list(objs: list[Obj], list_meta: Obj) -> Obj:
    """A PartialObjectMetadataList: each item's metadata, with its kind set, and the list's own metadata."""
    return {
        "kind": PARTIAL_LIST,
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "items": [partial_metadata(o) for o in objs],
    }


def table_rows(strategy: Strategy, objs: list[Obj], include: str) -> list[Obj]:
    rows = []
    for o in objs:
        row: Obj = {"cells": strategy.table_row(o)}
        if include == "Object":
            row["object"] = o
        elif include != "None":
            row["object"] = partial_metadata(o)
        rows.append(row)
    return rows


def include_object(request: web.Request) -> str:
    v = request.query.get("includeObject", "Metadata") or "Metadata"
    if v not in ("Metadata", "Object", "None"):
        raise st.bad_request(f'unrecognized includeObject value: "{v}"')
    return v


def to_table(
    request: web.Request, strategy: Strategy, objs: list[Obj], list_meta: Obj | None = None, headers: bool = True
) -> Obj:
    table: Obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta or {}}
    table["columnDefinitions"] = strategy.table_columns() if headers else None
    table["rows"] = table_rows(strategy, objs, include_object(request))
    return table
