"""GET /openapi/v2, /openapi/v3 and /openapi/v3/<group path>: kube-apiserver's OpenAPI endpoints; called by
handlers/dispatch.py for non-resource paths under /openapi."""

from __future__ import annotations

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.codec import json_response
from pykubeadm.apiserver.openapi.documents import Documents
from pykubeadm.apiserver.state import ApiState

__all__ = ["DOCUMENTS", "serve_openapi"]

#: One cache per process; it rebuilds when the set of served kinds (CRDs) changes.
DOCUMENTS = Documents()
_PROTO_V2 = "application/com.github.proto-openapi.spec.v2"


def _kinds(state: ApiState) -> list:
    return [s.strategy for s in state.stores.values()]


async def serve_openapi(request: web.Request, state: ApiState, path: str) -> web.StreamResponse:
    """`path` is the request path without a trailing slash."""
    if path == "/openapi/v2":
        accept = request.headers.get("Accept", "")
        first = accept.split(",", 1)[0]
        if _PROTO_V2 in first or ("protobuf" in first and "json" not in first):
            # kubectl <= 1.28 asks for the gnostic protobuf document; an empty one (no schemas) makes it skip its
            # client-side checks and rely on the server's field validation, which it then requests.
            return web.Response(body=b"", content_type="application/octet-stream")
        return web.Response(body=DOCUMENTS.v2(_kinds(state)), content_type="application/json")
    if path == "/openapi/v3":
        return json_response(DOCUMENTS.v3_index(_kinds(state)))
    if path.startswith("/openapi/v3/"):
        body = DOCUMENTS.v3(_kinds(state), path[len("/openapi/v3/") :])
        if body is not None:
            headers = {"Cache-Control": "public, immutable"} if request.query.get("hash") else {}
            return web.Response(body=body, content_type="application/json", headers=headers)
    raise st.not_found_path()
