"""The kubelet's streaming routes: /exec, /attach and /portForward (with and without the Pod UID), as the kubelet serves them.

Each handler finds the container through the `ContainerLocator`, then speaks what the client asked for: WebSocket
channels (`wsserve.py`, port-forward `wsportforward.py`), SPDY (`spdyserve.py`) or SPDY tunnelled in WebSocket
(kubectl's port-forward). A container of a CRI runtime (`ContainerRef.runtime_streams`) is served by the runtime's
streaming server: the handler asks the runtime for the session's URL and proxies the upgrade there. Registered by
`kubelet.server.KubeletServer`, which authenticates and authorizes first (nodes/proxy).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial

from aiohttp import web
from yarl import URL

from pykubeadm.kubelet.streaming import remotecommand
from pykubeadm.kubelet.streaming.container import ContainerLocator, ContainerRef
from pykubeadm.kubelet.streaming.spdyserve import (
    is_spdy,
    serve_spdy_command,
    serve_spdy_portforward,
    serve_tunnelled_portforward,
    wants_tunnel,
)
from pykubeadm.kubelet.streaming.wsportforward import serve_ws_portforward
from pykubeadm.streaming.remotecommand import StreamOptions
from pykubeadm.streaming.wsserve import is_websocket, serve_websocket
from pykubeadm.util.httpupgrade import proxy_upgrade

__all__ = ["add_streaming_routes"]

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _locate(locate: ContainerLocator, request: web.Request, container: str) -> ContainerRef:
    found = locate(request.match_info["namespace"], request.match_info["pod"], container)
    if isinstance(found, str):
        raise web.HTTPNotFound(text=found)
    return found


def _command_handler(locate: ContainerLocator, attach: bool) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        opts = StreamOptions.from_query(request.query)
        if not attach and not opts.command:
            raise web.HTTPBadRequest(text="you must specify at least 1 command")
        if not (opts.stdin or opts.stdout or opts.stderr):
            raise web.HTTPBadRequest(text="you must specify at least 1 of stdin, stdout, stderr")
        ref = _locate(locate, request, request.match_info["container"])
        remote = getattr(ref, "runtime_streams", None)  # only containers of a CRI runtime have it
        if remote is not None:
            return await _proxy(request, await (remote.attach_url(opts) if attach else remote.exec_url(opts)))
        run = partial(remotecommand.run_attach if attach else remotecommand.run_exec, ref, opts)
        if is_websocket(request):
            return await serve_websocket(request, opts, run)
        if is_spdy(request):
            return await serve_spdy_command(request, opts, run)
        raise web.HTTPBadRequest(text="Upgrade request required")

    return handler


def _portforward_handler(locate: ContainerLocator) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        ref = _locate(locate, request, "")
        pod, uid = request.match_info["pod"], request.match_info.get("uid", "")
        remote = getattr(ref, "runtime_streams", None)  # only containers of a CRI runtime have it
        if remote is not None:
            ports = [int(p) for v in request.query.getall("port", []) for p in v.split(",") if p.strip().isdigit()]
            return await _proxy(request, await remote.port_forward_url(ports))
        if is_websocket(request) and wants_tunnel(request):
            return await serve_tunnelled_portforward(request, ref.pod_ip, pod, uid)
        if is_websocket(request):
            return await serve_ws_portforward(request, ref.pod_ip, pod, uid)
        if is_spdy(request):
            return await serve_spdy_portforward(request, ref.pod_ip, pod, uid)
        raise web.HTTPBadRequest(text="Upgrade request required")

    return handler


async def _proxy(request: web.Request, url: str) -> web.StreamResponse:
    """Proxy the client's upgrade to the runtime's streaming server at `url` (its query string kept)."""
    target = URL(url)
    if target.scheme != "http" or not target.host or target.port is None:
        raise web.HTTPInternalServerError(text=f"container runtime streaming URL {url!r} is not http://host:port/...")
    path = target.raw_path_qs
    if request.rel_url.raw_query_string:
        path += ("&" if "?" in path else "?") + request.rel_url.raw_query_string
    try:
        resp = await proxy_upgrade(request, target.host, target.port, path)
        if resp.status != 101:
            body = resp.body if isinstance(resp, web.Response) else b""
            log.info("container runtime at %s refused the upgrade: %s %r", url, resp.status, body)
        return resp
    except (OSError, TimeoutError, ValueError) as e:
        raise web.HTTPInternalServerError(text=f"error proxying to the container runtime at {url}: {e}") from None


def add_streaming_routes(router: web.UrlDispatcher, locate: ContainerLocator) -> None:
    """GET (WebSocket) and POST (SPDY) on each path, like the kubelet's restful routes."""
    exec_h, attach_h, pf_h = (
        _command_handler(locate, False),
        _command_handler(locate, True),
        _portforward_handler(locate),
    )
    for path, handler in (
        ("/exec/{namespace}/{pod}/{container}", exec_h),
        ("/exec/{namespace}/{pod}/{uid}/{container}", exec_h),
        ("/attach/{namespace}/{pod}/{container}", attach_h),
        ("/attach/{namespace}/{pod}/{uid}/{container}", attach_h),
        ("/portForward/{namespace}/{pod}", pf_h),
        ("/portForward/{namespace}/{pod}/{uid}", pf_h),
    ):
        router.add_get(path, handler, allow_head=False)
        router.add_post(path, handler)
