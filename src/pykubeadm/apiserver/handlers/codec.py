"""Request decoding and response encoding shared by the verb handlers: JSON/YAML/protobuf bodies, query parameters,
the Table response for `kubectl get`, and JSON responses.
"""

from __future__ import annotations

from typing import Any

import yaml
from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.registry.base import Obj, Strategy
from pykubeadm.util import jsoncodec

__all__ = ["decode_body", "json_response", "query_bool", "query_int", "wants_table"]

MAX_BODY = 3 * 1024 * 1024
PROTOBUF = "application/vnd.kubernetes.protobuf"
_ACCEPTED = ["application/json", "application/yaml", PROTOBUF]


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        body=jsoncodec.dumps(obj),
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
    try:
        data = await request.content.read(MAX_BODY + 1)
    except Exception as e:
        raise st.bad_request(f"unable to read the request body: {e}") from None
    if len(data) > MAX_BODY:
        raise st.ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY}")
    return data


def parse_json_or_yaml(data: bytes, mt: str) -> Any:
    if mt in ("application/yaml", "application/apply-patch+yaml"):
        try:
            return yaml.safe_load(data.decode("utf-8")) if data.strip() else None
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            # Only the position and the problem: the YAML library's snippet of the document could be secret data.
            mark = getattr(e, "problem_mark", None)
            where = f"line {mark.line + 1}: " if mark is not None else ""
            problem = getattr(e, "problem", None) or type(e).__name__
            raise st.bad_request(f"error converting YAML to JSON: yaml: {where}{problem}") from None
    try:
        return jsoncodec.loads(data) if data.strip() else None
    except (ValueError, UnicodeDecodeError) as e:
        raise st.bad_request(f"couldn't get version/kind; json parse error: {e}") from None


async def decode_body(request: web.Request, expect_kind: str, expect_api_version: str) -> Obj:
    """The request object as a JSON dict, checked against the kind the URL expects."""
    data = await read_raw(request)
    mt = media_type(request)
    if mt in ("", "application/json", "*/*", "application/yaml", "text/plain"):
        obj = parse_json_or_yaml(data, mt)
    elif mt == PROTOBUF:
        from pykubeadm.apiserver.proto import decode_protobuf

        obj = decode_protobuf(data)
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
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise st.bad_request("metadata must be an object")
    return obj


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
    if not strategy.top_fields or not isinstance(obj, dict):
        return []
    unknown = [k for k in obj if k not in strategy.top_fields and k not in ("apiVersion", "kind", "metadata")]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        unknown += [f"metadata.{k}" for k in meta if k not in META_FIELDS]
    if not unknown:
        return []
    if mode == "Strict":
        raise st.bad_request(
            f'{strategy.kind} in version "{strategy.version}" cannot be handled as a {strategy.kind}: '
            "strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown)
        )
    for u in unknown:
        if u.startswith("metadata."):
            meta.pop(u[len("metadata.") :], None)
        else:
            obj.pop(u, None)
    return [] if mode == "Ignore" else [f'unknown field "{u}"' for u in unknown]


def add_warnings(resp: web.StreamResponse, warnings: list[str]) -> web.StreamResponse:
    for w in warnings:
        resp.headers.add("Warning", '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return resp


def wants_table(request: web.Request) -> bool:
    return "as=Table" in request.headers.get("Accept", "")


def _partial(obj: Obj) -> Obj:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def table_rows(strategy: Strategy, objs: list[Obj], include: str) -> list[Obj]:
    rows = []
    for o in objs:
        row: Obj = {"cells": strategy.table_row(o)}
        if include == "Object":
            row["object"] = o
        elif include != "None":
            row["object"] = _partial(o)
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
