"""GET /openapi/v2, /openapi/v3 and /openapi/v3/<group path>: kube-apiserver's OpenAPI endpoints; called by
handlers/dispatch.py for non-resource paths under /openapi.

/openapi/v2 negotiates like kube-openapi's handler: the Accept clauses (best q first) pick JSON or gnostic's protobuf
(`application/com.github.proto-openapi.spec.v2.v1.0+protobuf`, or the deprecated `…spec.v2@v1.0+protobuf`, which is
answered with the former as Content-Type because Go's mime parser rejects the `@`); nothing acceptable is a bare 406.
Both forms carry the JSON document's ETag and Last-Modified and answer If-None-Match / If-Modified-Since with 304,
and are gzipped for clients that accept it (Go clients always do), as kube-openapi's gziphandler wrapper does.
"""

from __future__ import annotations

import datetime as dt

from aiohttp import web
from multidict import CIMultiDict

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.codec import json_response
from pykubeadm.apiserver.openapi.documents import Documents
from pykubeadm.apiserver.openapi.protov2 import EncodedV2, V2Cache
from pykubeadm.apiserver.state import ApiState

__all__ = ["DOCUMENTS", "PROTO_V2", "V2", "negotiate_v2", "serve_openapi"]

#: One cache per process; it rebuilds when the set of served kinds (CRDs) changes.
DOCUMENTS = Documents()
#: The ETag and protobuf form of DOCUMENTS' /openapi/v2 JSON.
V2 = V2Cache()
PROTO_V2 = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_PROTO_V2_DEPRECATED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
_V2_TYPES = ("application/json", _PROTO_V2_DEPRECATED, PROTO_V2)


def _kinds(state: ApiState) -> list:
    return [s.strategy for s in state.stores.values()]


async def serve_openapi(request: web.Request, state: ApiState, path: str) -> web.StreamResponse:
    """`path` is the request path without a trailing slash."""
    if path == "/openapi/v2":
        return _serve_v2(request, state)
    if path == "/openapi/v3":
        return json_response(DOCUMENTS.v3_index(_kinds(state)))
    if path.startswith("/openapi/v3/"):
        body = DOCUMENTS.v3(_kinds(state), path[len("/openapi/v3/") :])
        if body is not None:
            headers = {"Cache-Control": "public, immutable"} if request.query.get("hash") else {}
            return web.Response(body=body, content_type="application/json", headers=headers)
    raise st.not_found_path()


def _quality(params: list[str]) -> float:
    """The `q` of one Accept / Accept-Encoding clause's parameters (1 when absent, 0 when unreadable)."""
    for param in params:
        key, eq, value = param.partition("=")
        if eq and key.strip() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 1.0


def _accept_clauses(accept: str) -> list[tuple[str, str]]:
    """(type, subtype) of each Accept clause, best first: goautoneg's ParseAccept order (q, then specific types)."""
    clauses: list[tuple[float, bool, bool, str, str]] = []
    for part in accept.split(","):
        media_range, *params = part.split(";")
        halves = media_range.split("/")
        type_ = halves[0].strip()
        if len(halves) == 2:
            subtype = halves[1].strip()
        elif len(halves) == 1 and type_ == "*":
            subtype = "*"
        else:
            continue
        clauses.append((-_quality(params), type_ == "*", subtype == "*", type_, subtype))
    clauses.sort(key=lambda c: c[:3])
    return [(c[3], c[4]) for c in clauses]


def negotiate_v2(accept: str) -> str | None:
    """The media type /openapi/v2 answers with, or None (406)."""
    for type_, subtype in _accept_clauses(accept or "*/*"):
        for offered in _V2_TYPES:
            o_type, o_subtype = offered.split("/", 1)
            if type_ in (o_type, "*") and subtype in (o_subtype, "*"):
                return PROTO_V2 if offered == _PROTO_V2_DEPRECATED else offered
    return None


def _not_modified(request: web.Request, entry: EncodedV2) -> bool:
    """Go's http.ServeContent preconditions for GET/HEAD: If-None-Match (weak comparison), else If-Modified-Since."""
    inm = request.headers.get("If-None-Match")
    if inm is not None:
        wanted = entry.etag.removeprefix("W/")
        return any(t.strip() == "*" or t.strip().removeprefix("W/") == wanted for t in inm.split(","))
    ims = request.if_modified_since
    return ims is not None and entry.last_modified <= ims.astimezone(dt.UTC)


def _accepts_gzip(request: web.Request) -> bool:
    """gziphandler's check: `gzip` listed in Accept-Encoding with a q above zero."""
    for part in request.headers.get("Accept-Encoding", "").split(","):
        coding, *params = part.split(";")
        if coding.strip().lower() != "gzip":
            continue
        return _quality(params) > 0
    return False


def _serve_v2(request: web.Request, state: ApiState) -> web.StreamResponse:
    # kube-openapi wraps the handler in gziphandler: Vary: Accept-Encoding first, then the handler's Vary: Accept.
    headers = CIMultiDict([("Vary", "Accept-Encoding"), ("Vary", "Accept")])
    media_type = negotiate_v2(request.headers.get("Accept", ""))
    if media_type is None:
        return web.Response(status=406, headers=headers)
    entry = V2.current(DOCUMENTS.v2(_kinds(state)))
    headers["Etag"] = entry.etag
    if _not_modified(request, entry):
        return web.Response(status=304, headers=headers)
    headers["Last-Modified"] = entry.last_modified.strftime("%a, %d %b %Y %H:%M:%S GMT")
    headers["Content-Type"] = media_type
    gzipped = _accepts_gzip(request)
    if gzipped:
        headers["Content-Encoding"] = "gzip"
    return web.Response(body=V2.body(entry, proto=media_type == PROTO_V2, gzipped=gzipped), headers=headers)
