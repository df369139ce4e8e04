"""GET pods/{name}/log: the API server proxies `kubectl logs` to the kubelet of the Pod's node.

Like kube-apiserver: the container is the `container` query parameter or the Pod's only container; the node is reached
at its InternalIP (then ExternalIP, Hostname: kubeadm's --kubelet-preferred-address-types) on the kubelet port the Node
reports, as the client `--kubelet-client-certificate/--kubelet-client-key` (kubeadm's apiserver-kubelet-client). With
--kubelet-certificate-authority the kubelet's serving certificate must chain to that CA and name the address dialled
(a kubelet presenting another node's certificate is refused); without it (kubeadm's default) it is not verified. The
log streams back
as text/plain (chunked while following). Redirects from the kubelet are refused, never followed
(kube-apiserver's PreventRedirects: a node controls its kubelet and its Node addresses).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.context import info_of, state_of
from pykubeadm.apiserver.registry import Store
from pykubeadm.util.tlscontext import insecure_client_context

__all__ = ["KubeletClient", "kubelet_endpoint", "pod_container", "pod_log"]

_ADDRESS_TYPES = ("InternalIP", "ExternalIP", "Hostname")
_PASSED_PARAMS = ("follow", "previous", "timestamps", "tailLines", "limitBytes", "sinceSeconds", "sinceTime")
_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound"}
_INT_PARAMS = {"tailLines": 0, "limitBytes": 1, "sinceSeconds": 1}  # name → minimum
_CLIENT_POLL = 0.5  # how often a following stream checks that its client is still there


class KubeletClient:
    """TLS to kubelets with the API server's kubelet client certificate (none configured: no client certificate),
    verifying the kubelet's certificate and address against `ca` when given (--kubelet-certificate-authority)."""

    def __init__(self, cert: Path | None, key: Path | None, ca: Path | None = None):
        if ca is not None:
            ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca))
        else:
            ctx = insecure_client_context()
        if cert is not None and key is not None:
            ctx.load_cert_chain(str(cert), str(key))
        self.ssl = ctx


def pod_container(pod: dict[str, Any], requested: str) -> str:
    """The `container` query parameter checked against the Pod's containers (init, regular and ephemeral, as
    kube-apiserver's validateContainer), or its only container (also pods/exec, attach)."""
    name = pod["metadata"]["name"]
    spec = pod.get("spec") or {}
    containers = [c.get("name", "") for c in spec.get("containers") or []]
    every = [
        c.get("name", "")
        for kind in ("initContainers", "containers", "ephemeralContainers")
        for c in spec.get(kind) or []
    ]
    if requested:
        if requested not in every:
            raise st.bad_request(f"container {requested} is not valid for pod {name}")
        return requested
    if len(containers) == 1:
        return containers[0]
    if not containers:
        raise st.bad_request(f"pod {name} does not have a container")
    raise st.bad_request(f"a container name must be specified for pod {name}, choose one of: [{' '.join(every)}]")


def kubelet_endpoint(node: dict[str, Any]) -> tuple[str, int]:
    """(address, port) of a Node's kubelet: the preferred address type first, the port the Node reports."""
    status = node.get("status") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    host = next((addresses[t] for t in _ADDRESS_TYPES if addresses.get(t)), "")
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port") or 10250
    if not host:
        raise st.internal(f"no preferred addresses found; known addresses: {list(addresses)}")
    return host, int(port)


def _query(request: web.Request) -> dict[str, str]:
    out = {}
    for name in _PASSED_PARAMS:
        value = request.query.get(name)
        if value in (None, ""):
            continue
        if name in _INT_PARAMS:
            try:
                number = int(value)
            except ValueError:
                raise st.bad_request(f'invalid value for {name}: "{value}": must be an integer') from None
            if number < _INT_PARAMS[name]:
                minimum = _INT_PARAMS[name]
                raise st.invalid(
                    "PodLogOptions",
                    "",
                    "",
                    [st.Cause("FieldValueInvalid", f"must be greater than or equal to {minimum}", name)],
                )
        out[name] = value
    return out


async def _copy_until_client_leaves(
    request: web.Request, upstream: aiohttp.ClientResponse, resp: web.StreamResponse
) -> bool:
    """Stream the kubelet's answer; stop (and so close the kubelet connection) when the client goes away, which
    aiohttp does not tell the handler (a quiet `logs -f` would otherwise hold both connections forever)."""

    async def copy() -> None:
        async for chunk in upstream.content.iter_any():
            await resp.write(chunk)

    task = asyncio.ensure_future(copy())
    try:
        while not task.done():
            await asyncio.wait([task], timeout=_CLIENT_POLL)
            if request.transport is None or request.transport.is_closing():
                return False
        task.result()
        return True
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await task


async def pod_log(request: web.Request, store: Store) -> web.StreamResponse:
    info = info_of(request)
    state = state_of(request)
    pod = await store.get(info.namespace, info.name)
    container = pod_container(pod, request.query.get("container", ""))
    params = _query(request)
    node_name = (pod.get("spec") or {}).get("nodeName") or ""
    if not node_name:
        raise st.bad_request(f"pod {info.name} does not have a host assigned")
    node = await state.store("nodes").get("", node_name)
    host, port = kubelet_endpoint(node)
    path = "/containerLogs/" + "/".join(quote(p, safe="") for p in (info.namespace, info.name, container))
    url = f"https://{host}:{port}{path}" + (f"?{urlencode(params)}" if params else "")
    client = state.kubelet_client or KubeletClient(None, None)
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=10)) as session,
            session.get(url, ssl=client.ssl, allow_redirects=False) as upstream,
        ):
            if 300 <= upstream.status < 400:  # never follow a kubelet's redirect with our client certificate
                raise st.ApiError(
                    500, "", f'Get "{url}": redirects are not followed (kubelet answered {upstream.status})'
                )
            if upstream.status != 200:
                text = (await upstream.text()).strip() or upstream.reason or ""
                code = upstream.status if upstream.status < 500 else 500
                raise st.ApiError(code, _REASONS.get(code, ""), text)
            resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
            await resp.prepare(request)
            if await _copy_until_client_leaves(request, upstream, resp):
                await resp.write_eof()
            return resp
    except aiohttp.ClientError as e:
        raise st.ApiError(500, "", f'Get "{url}": {e}') from None
