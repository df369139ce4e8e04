"""WebSocket in front, SPDY to the kubelet: kube-apiserver's stream translation for pods/exec, attach, portforward.

kubectl ≥ 1.30 asks for exec/attach over WebSocket with `v5.channel.k8s.io`; a kubelet, or the container runtime's
streaming server it proxies to (containerd 1.6 has no v5), may not speak it. Like kube-apiserver's
StreamTranslatorProxy (feature TranslateStreamCloseWebsocketRequests, on by default since 1.30), `translate_command`
answers the WebSocket itself (v5 only), runs the session as a SPDY client (`v4.channel.k8s.io`) against the kubelet
and relays the kubelet's Status on the error channel the way client-go's executor reads it (an exit code stays one).
kubectl ≥ 1.31 asks for port-forward over WebSocket with `SPDY/3.1+portforward.k8s.io`: SPDY framed in binary
messages. Like kube-apiserver's tunneling handler (feature PortForwardWebsockets, on since 1.31),
`tunnel_portforward` upgrades the kubelet to SPDY with the protocols the client named, answers the client's WebSocket
with the kubelet's choice and copies the SPDY bytes between binary messages and the kubelet's connection.
Every other upgrade passes through unchanged (`podconnect`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.streaming import spdyclient
from pykubeadm.streaming.remotecommand import StreamIO, StreamOptions, success_status
from pykubeadm.streaming.wsserve import TUNNEL_PREFIX, V5, binary_pipe, serve_websocket
from pykubeadm.util.httpupgrade import read_body, request_upgrade, splice

__all__ = ["TUNNEL_PREFIX", "Upstream", "is_tunnel_request", "is_v5_request", "translate_command", "tunnel_portforward"]

#: kubectl's WebSocket subprotocols for SPDY tunnelled in binary messages: the prefix and a SPDY stream protocol.

_KUBERNETES_SUFFIX = ".k8s.io"
_DIAL_TIMEOUT = 10.0
_NON_ZERO_EXIT = "NonZeroExitCode"


def _subprotocols(request: web.Request) -> list[str]:
    return [p.strip() for h in request.headers.getall("Sec-WebSocket-Protocol", []) for p in h.split(",") if p.strip()]


def _is_websocket(request: web.Request) -> bool:
    tokens = {t.strip().lower() for t in request.headers.get("Connection", "").split(",")}
    return "upgrade" in tokens and request.headers.get("Upgrade", "").lower() == "websocket"


def is_v5_request(request: web.Request) -> bool:
    """A WebSocket upgrade offering the stream protocol with the close signal (wsstream's
    IsWebSocketRequestWithStreamCloseProtocol)."""
    return _is_websocket(request) and V5 in _subprotocols(request)


def is_tunnel_request(request: web.Request) -> bool:
    """A WebSocket upgrade offering SPDY tunnelled in WebSocket (IsWebSocketRequestWithTunnelingProtocol)."""
    return _is_websocket(request) and any(p.startswith(TUNNEL_PREFIX) for p in _subprotocols(request))


@dataclass(frozen=True)
class Upstream:
    """The kubelet's streaming endpoint of one request, dialled as the apiserver-kubelet-client."""

    host: str
    port: int
    target: str  # path and query
    ssl: ssl.SSLContext | None

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}{self.target}"

    async def upgrade(
        self, method: str, headers: list[tuple[str, str]]
    ) -> tuple[int, list[tuple[str, str]], asyncio.StreamReader, asyncio.StreamWriter]:
        """Send the upgrade request; the kubelet's status and headers, and the connection (the caller closes it)."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, ssl=self.ssl, server_hostname=self.host), _DIAL_TIMEOUT
            )
        except (OSError, TimeoutError) as e:
            raise st.ApiError(500, "", f"error dialing backend: {e}") from None
        try:
            code, answer = await request_upgrade(
                reader, writer, method, self.target, f"{self.host}:{self.port}", headers
            )
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError) as e:
            writer.close()
            raise st.ApiError(500, "", f"error proxying to {self.url}: {e}") from None
        return code, answer, reader, writer


def _header(headers: list[tuple[str, str]], name: str) -> str:
    return next((v for k, v in headers if k.lower() == name), "")


def _upgraded_to_spdy(code: int, headers: list[tuple[str, str]]) -> bool:
    return (
        code == 101
        and "upgrade" in _header(headers, "connection").lower()
        and "spdy/3.1" in _header(headers, "upgrade").lower()
    )


def _internal(message: str) -> dict[str, Any]:
    """apierrors.NewInternalError(err).Status() as the translator writes it (no kind/apiVersion)."""
    status = st.internal(message).to_status()
    status.pop("kind", None)
    status.pop("apiVersion", None)
    return status


def _refusal(body: bytes) -> dict[str, Any]:
    """The kubelet did not upgrade: a Status body is the session's Status, anything else an internal error."""
    with contextlib.suppress(ValueError):
        decoded = json.loads(body)
        if isinstance(decoded, dict) and decoded.get("kind") == "Status":
            return decoded
    return _internal(f"unable to upgrade connection: {body.decode(errors='replace').strip()}")


def relay_status(status: dict[str, Any]) -> dict[str, Any]:
    """The kubelet's v4 Status as client-go's executor reads it, then written back as the translator does: Success;
    an exit code as NonZeroExitCode with its ExitCode cause; any other failure as an internal error with its
    message."""
    if status.get("status") == "Success":
        return success_status()
    if status.get("status") != "Failure":
        return _internal("error stream protocol error: unknown error")
    if status.get("reason") != _NON_ZERO_EXIT:
        return _internal(str(status.get("message") or ""))
    details = status.get("details")
    if not isinstance(details, dict):
        return _internal("error stream protocol error: details must be set")
    for cause in details.get("causes") or []:
        if not isinstance(cause, dict) or cause.get("reason") != "ExitCode":
            continue
        text = str(cause.get("message", ""))
        if not text.isdigit() or int(text) > 255:
            return _internal(f'error stream protocol error: invalid exit code value "{text}"')
        return {
            "metadata": {},
            "status": "Failure",
            "message": f"command terminated with non-zero exit code: command terminated with exit code {int(text)}",
            "reason": _NON_ZERO_EXIT,
            "details": {"causes": [{"reason": "ExitCode", "message": text}]},
        }
    return _internal("error stream protocol error: no ExitCode cause given")


async def translate_command(request: web.Request, upstream: Upstream, opts: StreamOptions) -> web.StreamResponse:
    """exec/attach: the client's WebSocket (v5) here, a SPDY session with the kubelet behind."""

    async def run(io: StreamIO) -> dict[str, Any]:
        headers = [
            ("Connection", "Upgrade"),
            ("Upgrade", "SPDY/3.1"),
            ("X-Stream-Protocol-Version", spdyclient.PROTOCOL),
            ("User-Agent", request.headers.get("User-Agent", "")),
        ]
        try:
            code, answer, reader, writer = await upstream.upgrade("POST", headers)
        except st.ApiError as e:
            return _internal(e.message)
        try:
            if not _upgraded_to_spdy(code, answer):
                return _refusal(await read_body(reader, answer))

            async def to_kubelet(data: bytes) -> None:
                writer.write(data)
                await writer.drain()

            async def from_kubelet() -> bytes:
                with contextlib.suppress(ConnectionError):
                    return await reader.read(64 * 1024)
                return b""

            try:
                return relay_status(await spdyclient.run_spdy_command(from_kubelet, to_kubelet, opts, io))
            except (ConnectionError, spdyclient.StreamProtocolError) as e:
                return _internal(str(e))
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    return await serve_websocket(request, opts, run, protocols=(V5,), announce=True)


async def tunnel_portforward(request: web.Request, upstream: Upstream) -> web.StreamResponse:
    """port-forward: SPDY in the client's WebSocket binary messages, SPDY on the kubelet's connection."""
    protocols = [
        p[len(TUNNEL_PREFIX) :]
        for p in _subprotocols(request)
        if p.startswith(TUNNEL_PREFIX) and p.endswith(_KUBERNETES_SUFFIX)
    ]
    if not protocols:
        return web.Response(status=400, text="unable to upgrade: no tunneling spdy protocols provided\n")
    headers = [("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1")]
    headers += [("X-Stream-Protocol-Version", p) for p in protocols]
    headers.append(("User-Agent", request.headers.get("User-Agent", "")))
    code, answer, reader, writer = await upstream.upgrade("POST", headers)
    try:
        if code != 101:  # the kubelet's answer goes back as it came
            ctype = _header(answer, "content-type") or "text/plain; charset=utf-8"
            return web.Response(status=code, body=await read_body(reader, answer), headers={"Content-Type": ctype})
        if not _upgraded_to_spdy(code, answer):
            return web.Response(status=500, text="unable to upgrade: missing upgrade headers in response\n")
        chosen = _header(answer, "x-stream-protocol-version").strip()
        ws = web.WebSocketResponse(
            protocols=(TUNNEL_PREFIX + chosen,) if chosen else (), compress=False, max_msg_size=0
        )
        await ws.prepare(request)
        ws_read, ws_write = binary_pipe(ws)

        async def to_kubelet(data: bytes) -> None:
            writer.write(data)
            await writer.drain()

        async def from_kubelet() -> bytes:
            return await reader.read(64 * 1024)

        await splice(ws_read, ws_write, from_kubelet, to_kubelet)
        with contextlib.suppress(Exception):
            await ws.close()
        return ws
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
