"""nodes/{name}/proxy[/path]: the API server's proxy to a node's kubelet (`kubectl get --raw
/api/v1/nodes/<node>/proxy/metrics/resource`, `/stats/summary`, `/configz`, `/pods`).

Like kube-apiserver's node REST location: `{name}` may carry a port and a scheme (`name:port`, `https:name:port`);
without a port, or with the kubelet's, the kubelet is dialled as for pods/log (`podlog.kubelet_endpoint`: the preferred
address, the port the Node reports, over TLS as the apiserver-kubelet-client); another port is dialled at the same
address with the scheme given (http by default) and no client certificate. The method, the rest of the path, the query
and the body go through; the caller's credentials do not. The kubelet's answer comes back as it is (status, content
type, body, streamed); redirects are passed back, never followed.
"""

from __future__ import annotations

import aiohttp
from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.context import info_of, state_of
from pykubeadm.apiserver.handlers.podlog import KubeletClient, kubelet_endpoint
from pykubeadm.apiserver.registry import Store

__all__ = ["node_proxy"]

#: Request headers passed to the node (never Authorization, cookies or impersonation).
_FORWARDED = ("accept", "content-type", "user-agent")
#: Response headers passed back.
_RETURNED = ("content-type", "location", "cache-control", "date")


def _split_name(raw: str) -> tuple[str, str, str]:
    """utilnet.SplitSchemeNamePort: (scheme, name, port) of `name`, `name:port` or `scheme:name:port`."""
    parts = raw.split(":")
    if len(parts) == 1:
        return "", parts[0], ""
    if len(parts) == 2:
        return "", parts[0], parts[1]
    if len(parts) == 3 and parts[0] in ("http", "https"):
        return parts[0], parts[1], parts[2]
    raise st.bad_request(f"invalid node request {raw!r}")


def _rest_of_path(request: web.Request, name: str) -> str:
    """The path after `.../nodes/{name}/proxy`, as the client sent it ("/" when empty)."""
    marker = f"/nodes/{name}/proxy"
    path = request.raw_path.split("?", 1)[0]
    at = path.find(marker)
    rest = path[at + len(marker) :] if at >= 0 else ""
    return rest if rest.startswith("/") else "/" + rest


async def node_proxy(request: web.Request, store: Store) -> web.StreamResponse:
    info = info_of(request)
    state = state_of(request)
    scheme, name, port = _split_name(info.name)
    node = await store.get("", name)
    host, kubelet_port = kubelet_endpoint(node)
    client = state.kubelet_client or KubeletClient(None, None)
    ssl_ctx = None
    if not port or port == str(kubelet_port):
        scheme, port, ssl_ctx = "https", str(kubelet_port), client.ssl
    elif not port.isdigit():
        raise st.bad_request(f"invalid port {port!r} in node request {info.name!r}")
    else:
        scheme = scheme or "http"
        ssl_ctx = client.ssl if scheme == "https" else None
    target = _rest_of_path(request, info.name)
    url = f"{scheme}://{host}:{port}{target}" + (f"?{request.query_string}" if request.query_string else "")
    headers = {k: v for k, v in request.headers.items() if k.lower() in _FORWARDED}
    body = await request.read() if request.can_read_body else None
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=10)) as session,
            session.request(
                request.method, url, headers=headers, data=body, ssl=ssl_ctx or False, allow_redirects=False
            ) as upstream,
        ):
            back = {k: v for k, v in upstream.headers.items() if k.lower() in _RETURNED}
            resp = web.StreamResponse(status=upstream.status, reason=upstream.reason, headers=back)
            await resp.prepare(request)
            async for chunk in upstream.content.iter_any():
                await resp.write(chunk)
            await resp.write_eof()
            return resp
    except aiohttp.ClientError as e:
        raise st.ApiError(503, "ServiceUnavailable", f"error trying to reach service: {e}") from None
