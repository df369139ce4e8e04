"""pods/exec, pods/attach, pods/portforward: the API server's upgrade-aware proxy to the kubelet of the Pod's node.

Like kube-apiserver: RBAC has authorized the verb of the method (POST → create for SPDY, GET → get for WebSocket);
a WebSocket upgrade must also be allowed to `create` the subresource (kube-apiserver's
AuthorizePodWebsocketUpgradeCreatePermission, so a GET cannot do what a POST may not). The Pod's container is
checked, its node's kubelet is found as for pods/log (`podlog.kubelet_endpoint`), and the request is re-issued to
`/exec|/attach/{ns}/{pod}/{container}` or `/portForward/{ns}/{pod}` with the kubelet's parameters (input, output,
error, tty, command) as the apiserver-kubelet-client. Like kube-apiserver with its default feature gates, a WebSocket
exec/attach offering `v5.channel.k8s.io` and a port-forward tunnelling SPDY in WebSocket are translated to SPDY
towards the kubelet (`streamtranslate`). Every other upgrade passes through: a `101 Switching Protocols` is passed
back and the bytes are spliced both ways (SPDY, WebSocket v4 and older channels); any other answer is returned as it
came (kubectl prints it), redirects are refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.authz.attributes import Decision
from pykubeadm.apiserver.handlers.context import info_of, state_of, user_of
from pykubeadm.apiserver.handlers.podlog import KubeletClient, kubelet_endpoint, pod_container
from pykubeadm.apiserver.handlers.streamtranslate import (
    Upstream,
    is_tunnel_request,
    is_v5_request,
    translate_command,
    tunnel_portforward,
)
from pykubeadm.apiserver.middleware.authorization import attributes_of, forbidden_error
from pykubeadm.apiserver.registry import Store
from pykubeadm.streaming.remotecommand import StreamOptions
from pykubeadm.util.httpupgrade import (
    UPGRADE_REQUEST_HEADERS,
    UPGRADE_RESPONSE_HEADERS,
    read_body,
    splice,
    switch_protocols,
)

__all__ = ["CONNECT_SUBRESOURCES", "pod_connect", "route"]

#: Subresource → the kubelet's path segment.
CONNECT_SUBRESOURCES = {"exec": "exec", "attach": "attach", "portforward": "portForward"}

#: Feature gates (on by default since 1.30 and 1.31): WebSocket v5 exec/attach translated to SPDY, port-forward's SPDY
#: tunnelled in WebSocket unwrapped (`streamtranslate`); off, those upgrades pass through like every other.
TRANSLATE_GATE = "TranslateStreamCloseWebsocketRequests"
TUNNEL_GATE = "PortForwardWebsockets"
_STREAM_PARAMS = (("stdin", "input"), ("stdout", "output"), ("stderr", "error"), ("tty", "tty"))


def _true(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "t")


def _kubelet_query(request: web.Request, sub: str) -> list[tuple[str, str]]:
    """PodExecOptions/PodAttachOptions/PodPortForwardOptions → the kubelet's query (kube's streamParams)."""
    query = request.query
    if sub == "portforward":
        return [("port", p.strip()) for value in query.getall("ports", []) for p in value.split(",") if p.strip()]
    params = [(kubelet, "1") for ours, kubelet in _STREAM_PARAMS if _true(query.get(ours))]
    if sub == "exec":
        params += [("command", c) for c in query.getall("command", [])]
    return params


def _is_upgrade(request: web.Request) -> bool:
    tokens = {t.strip().lower() for t in request.headers.get("Connection", "").split(",")}
    return "upgrade" in tokens and bool(request.headers.get("Upgrade"))


async def _authorize_websocket_create(request: web.Request) -> None:
    if request.headers.get("Upgrade", "").lower() != "websocket" or info_of(request).verb == "create":
        return
    attrs = dataclasses.replace(attributes_of(info_of(request), user_of(request), request.query), verb="create")
    decision, reason = await state_of(request).authorizer(attrs)
    if decision != Decision.ALLOW:
        raise forbidden_error(attrs, reason)


def _validate(pod: dict[str, Any], sub: str, request: web.Request) -> str:
    """The container (exec/attach) after the checks kube-apiserver's options validation makes."""
    if sub == "portforward":
        return ""
    container = pod_container(pod, request.query.get("container", ""))
    q = request.query
    if sub == "exec" and not q.getall("command", []):
        raise st.bad_request("you must specify at least 1 command")
    if not any(_true(q.get(n)) for n in ("stdin", "stdout", "stderr")):
        raise st.bad_request("you must specify at least 1 of stdin, stdout, stderr")
    return container


async def pod_connect(request: web.Request, store: Store) -> web.StreamResponse:
    info = info_of(request)
    sub = info.subresource
    if info.verb not in ("get", "create"):
        raise st.method_not_allowed()
    await _authorize_websocket_create(request)
    state = state_of(request)
    pod = await store.get(info.namespace, info.name)
    container = _validate(pod, sub, request)
    node_name = (pod.get("spec") or {}).get("nodeName") or ""
    if not node_name:
        raise st.bad_request(f"pod {info.name} does not have a host assigned")
    if not _is_upgrade(request):
        raise st.bad_request("Upgrade request required")
    host, port = kubelet_endpoint(await state.store("nodes").get("", node_name))
    parts = [info.namespace, info.name] + ([container] if container else [])
    path = f"/{CONNECT_SUBRESOURCES[sub]}/" + "/".join(quote(p, safe="") for p in parts)
    query = _kubelet_query(request, sub)
    client = state.kubelet_client or KubeletClient(None, None)
    upstream = Upstream(host, port, path + (f"?{urlencode(query)}" if query else ""), client.ssl)
    way = route(sub, state.feature_gates, request)
    if way == "translate":
        return await translate_command(request, upstream, StreamOptions.from_query(request.query))
    if way == "tunnel":
        return await tunnel_portforward(request, upstream)
    return await _pass_through(request, upstream)


def route(sub: str, gates: Mapping[str, bool], request: web.Request) -> str:
    """How an upgrade reaches the kubelet: `translate` (WebSocket v5 exec/attach → SPDY), `tunnel` (port-forward's
    SPDY unwrapped from WebSocket) or `pass` (as it came), as kube-apiserver decides with its feature gates."""
    if sub != "portforward" and gates.get(TRANSLATE_GATE, True) and is_v5_request(request):
        return "translate"
    if sub == "portforward" and gates.get(TUNNEL_GATE, True) and is_tunnel_request(request):
        return "tunnel"
    return "pass"


async def _pass_through(request: web.Request, upstream: Upstream) -> web.StreamResponse:
    """The client's upgrade to the kubelet as it is; the kubelet's 101 back and the bytes spliced both ways."""
    forwarded = [(k, v) for k, v in request.headers.items() if k.lower() in UPGRADE_REQUEST_HEADERS]
    status, headers, reader, writer = await upstream.upgrade(request.method, forwarded)
    try:
        if status != 101:
            return await _not_upgraded(reader, status, headers, upstream.url)
        back = {k: v for k, v in headers if k.lower() in UPGRADE_RESPONSE_HEADERS}
        resp, conn = await switch_protocols(request, back)

        async def to_kubelet(data: bytes) -> None:
            writer.write(data)
            await writer.drain()

        async def from_kubelet() -> bytes:
            return await reader.read(64 * 1024)

        await splice(conn.read, conn.write, from_kubelet, to_kubelet)
        conn.close()
        return resp
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError) as e:
        raise st.ApiError(500, "", f"error proxying to {upstream.url}: {e}") from None
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def _not_upgraded(
    reader: asyncio.StreamReader, status: int, headers: list[tuple[str, str]], url: str
) -> web.Response:
    """The kubelet refused the upgrade: its answer goes back as it is (kubectl shows the text); redirects never."""
    if 300 <= status < 400:
        raise st.ApiError(500, "", f'Get "{url}": redirects are not followed (kubelet answered {status})')
    body = await read_body(reader, headers)
    ctype = next((v for k, v in headers if k.lower() == "content-type"), "text/plain; charset=utf-8")
    return web.Response(status=status, body=body, headers={"Content-Type": ctype})
