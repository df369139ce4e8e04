"""Output negotiation as kube-apiserver does it: the Accept header (and `?pretty`) picks compact JSON, pretty JSON or
YAML; a request accepting only media types we cannot write gets 406 NotAcceptable. Called by dispatch (406 before the
work) and by the recovery middleware (re-encodes every JSON answer, errors included, in the negotiated format).

We write JSON and YAML but never protobuf (apiserver/proto only decodes), so an Accept listing protobuf alone is
refused with kube's message and client-go, which always lists JSON second, is never affected.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.codec import go_escape
from pykubeadm.util import jsoncodec

__all__ = ["OUTPUT_KEY", "negotiate_output", "render"]

#: request key: "json", "pretty" or "yaml".
OUTPUT_KEY = web.RequestKey("output_format", str)

JSON = "application/json"
YAML = "application/yaml"
#: What a resource answer can be written as (kube lists protobuf too; we cannot encode it).
ACCEPTED = [JSON, YAML]
_FAST = frozenset({"", "*/*", JSON, "application/json, */*", "application/json,*/*"})


def _pretty_wanted(request: web.Request) -> bool:
    """kube's isPrettyPrint: ?pretty=<bool>, else user agents curl*, Wget*, Mozilla/5.0*."""
    if "pretty" in request.query_string:
        pp = request.query.get("pretty", "")
        if pp:
            return pp.lower() in ("1", "t", "true")
    ua = request.headers.get("User-Agent", "")
    return ua.startswith(("curl", "Wget", "Mozilla/5.0"))


def _media_types(accept: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        if not fields[0]:
            continue
        params = {}
        for f in fields[1:]:
            if "=" in f:
                k, v = f.split("=", 1)
                params[k.strip().lower()] = v.strip()
        out.append((fields[0].lower(), params))
    return out


def negotiate_output(request: web.Request, streaming: bool = False) -> str:
    """The format of this request's answer; raises 406 when the Accept header allows nothing we can write."""
    accept = request.headers.get("Accept", "")
    fmt = "json"
    if accept not in _FAST:
        fmt = ""
        for mt, params in _media_types(accept):
            if params.get("as"):  # Table / discovery: the JSON handlers decide
                fmt = "json"
                break
            if mt in (JSON, "application/*", "*/*"):
                fmt = "json"
                break
            if mt == YAML and not streaming:
                fmt = "yaml"
                break
        if not fmt:
            types = [JSON] if streaming else ACCEPTED
            raise st.ApiError(
                406, "NotAcceptable", f"only the following media types are accepted: {', '.join(types)}", None
            )
    if fmt == "json" and _pretty_wanted(request):
        fmt = "pretty"
    request[OUTPUT_KEY] = fmt
    return fmt


def _yaml(obj: Any) -> bytes:
    import yaml  # on the first YAML answer: PyYAML is not every apiserver start's cost

    return yaml.safe_dump(obj, default_flow_style=False, allow_unicode=True, sort_keys=True).encode()


def render(request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
    """Re-encode a JSON `web.Response` in the negotiated format (pretty: Go's MarshalIndent, no final newline; YAML:
    sigs.k8s.io/yaml's JSONToYAML, sorted keys). Streams and non-JSON answers pass unchanged."""
    fmt = request.get(OUTPUT_KEY)
    if fmt is None or fmt == "json" or not isinstance(resp, web.Response) or resp.content_type != JSON:
        return resp
    body = resp.body
    if not isinstance(body, bytes | bytearray) or not body:
        return resp
    try:
        obj = jsoncodec.loads(body)
    except ValueError:
        return resp
    if fmt == "yaml":
        resp.body = _yaml(obj)
        resp.content_type = YAML
    else:
        try:
            resp.body = go_escape(orjson.dumps(obj, option=orjson.OPT_INDENT_2))
        except TypeError:
            import json

            resp.body = go_escape(json.dumps(obj, indent=2, ensure_ascii=False).encode())
    return resp
