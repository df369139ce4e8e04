"""exec/attach and port-forward over SPDY/3.1: the upgrade handshake, the streams each protocol expects, the splice.

exec/attach (kubectl ≤ 1.29): `Upgrade: SPDY/3.1` with `X-Stream-Protocol-Version: v4.channel.k8s.io`; the client
opens one stream per channel (header `streamType`: error, stdin, stdout, stderr, resize); the session runs once all
expected streams are there, then stdout/stderr are half-closed, the Status goes on the error stream, and GOAWAY.
port-forward (`portforward.k8s.io`, also tunnelled in WebSocket binary messages as `SPDY/3.1+portforward.k8s.io`
by kubectl ≥ 1.31): per local connection an `error` and a `data` stream with the same `requestID` and a `port`;
the data stream is spliced with a TCP connection to the Pod's IP and port, failures are written to the error stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from pykubeadm.streaming.remotecommand import StreamIO, StreamOptions
from pykubeadm.streaming.session import SpdySession, SpdyStream
from pykubeadm.streaming.wsserve import TUNNEL_PREFIX, binary_pipe, parse_resize
from pykubeadm.util.httpupgrade import switch_protocols

__all__ = [
    "PORTFORWARD_PROTOCOL",
    "REMOTECOMMAND_PROTOCOLS",
    "is_spdy",
    "serve_spdy_command",
    "serve_spdy_portforward",
    "serve_tunnelled_portforward",
]

log = logging.getLogger(__name__)

#: Stream protocols for exec/attach over SPDY that we speak (kubectl offers v4 first).
REMOTECOMMAND_PROTOCOLS = ("v4.channel.k8s.io",)
PORTFORWARD_PROTOCOL = "portforward.k8s.io"
_STREAM_WAIT = 30.0  # the kubelet's stream creation timeout


def is_spdy(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower().startswith("spdy/")


def _negotiate(request: web.Request, supported: tuple[str, ...]) -> str | None:
    offered = [p.strip() for h in request.headers.getall("X-Stream-Protocol-Version", []) for p in h.split(",")]
    return next((p for p in offered if p in supported), None)


async def _upgrade(request: web.Request, supported: tuple[str, ...]) -> tuple[web.StreamResponse, Any, str] | None:
    protocol = _negotiate(request, supported)
    if protocol is None:
        return None
    headers = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1", "X-Stream-Protocol-Version": protocol}
    resp, conn = await switch_protocols(request, headers)
    return resp, conn, protocol


def _bad_protocol(request: web.Request, supported: tuple[str, ...]) -> web.Response:
    offered = request.headers.getall("X-Stream-Protocol-Version", [])
    return web.Response(
        status=403,
        text=f"unable to upgrade: unable to negotiate protocol: client supports {offered}, server supports "
        f"{list(supported)}",
    )


async def serve_spdy_command(
    request: web.Request, opts: StreamOptions, run: Callable[[StreamIO], Awaitable[dict[str, Any]]]
) -> web.StreamResponse:
    upgraded = await _upgrade(request, REMOTECOMMAND_PROTOCOLS)
    if upgraded is None:
        return _bad_protocol(request, REMOTECOMMAND_PROTOCOLS)
    resp, conn, _ = upgraded
    wanted = {"error"} | {n for n, on in (("stdin", opts.stdin), ("stdout", opts.stdout)) if on}
    if opts.stderr:
        wanted.add("stderr")
    if opts.tty:
        wanted.add("resize")
    streams: dict[str, SpdyStream] = {}
    all_there = asyncio.Event()

    def on_stream(stream: SpdyStream) -> None:
        streams[stream.header("streamType")] = stream
        if wanted <= streams.keys():
            all_there.set()

    session = SpdySession(conn.read, conn.write, on_stream)
    reader = asyncio.ensure_future(session.run())
    try:
        try:
            await asyncio.wait_for(all_there.wait(), _STREAM_WAIT)
        except TimeoutError:
            log.info("exec: timed out waiting for client streams (have %s, want %s)", sorted(streams), sorted(wanted))
            return resp
        io = StreamIO(
            stdout=streams["stdout"].write if opts.stdout else None,
            stderr=streams["stderr"].write if opts.stderr else None,
            stdin=streams["stdin"].read if opts.stdin else None,
        )
        sizes = asyncio.ensure_future(_read_resizes(streams["resize"], io)) if opts.tty else None
        command = asyncio.ensure_future(run(io))
        await asyncio.wait([command, reader], return_when=asyncio.FIRST_COMPLETED)
        if sizes is not None:
            sizes.cancel()
        if not command.done():  # the client went away
            command.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await command
            return resp
        status = command.result()
        with contextlib.suppress(ConnectionError, OSError):
            for name in ("stdout", "stderr"):
                if name in streams:
                    await streams[name].close()
            await streams["error"].write(json.dumps(status).encode())
            await streams["error"].close()
    finally:
        await session.close()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
        conn.close()
    return resp


async def _read_resizes(stream: SpdyStream, io: StreamIO) -> None:
    """The resize stream carries a sequence of JSON objects; split them with a streaming decoder."""
    decoder, buf = json.JSONDecoder(), ""
    while data := await stream.read():
        buf += data.decode(errors="replace")
        while buf.strip():
            try:
                _, end = decoder.raw_decode(buf.lstrip())
            except ValueError:
                break
            text = buf.lstrip()
            size = parse_resize(text[:end].encode())
            buf = text[end:]
            if size is not None:
                io.resizes.put_nowait(size)


# --- port-forward -----------------------------------------------------------------------------------------------


class _PortForwarder:
    """Pairs a connection's error and data streams and splices the data stream with the Pod's port."""

    def __init__(self, host: str, pod: str, uid: str):
        self.host, self.pod, self.uid = host, pod, uid
        self.pairs: dict[str, dict[str, SpdyStream]] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    def on_stream(self, stream: SpdyStream) -> None:
        kind, request_id = stream.header("streamType"), stream.header("requestID")
        pair = self.pairs.setdefault(request_id, {})
        pair[kind] = stream
        if "data" in pair and "error" in pair:
            del self.pairs[request_id]
            task = asyncio.ensure_future(self._forward(pair["data"], pair["error"]))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _forward(self, data: SpdyStream, error: SpdyStream) -> None:
        port_text = data.header("port")
        try:
            port = int(port_text)
            if not 0 < port < 65536:
                raise ValueError
        except ValueError:
            await _report(error, f'invalid port header "{port_text}"')
            return
        try:
            reader, writer = await asyncio.open_connection(self.host, port)
        except OSError as e:
            await _report(
                error,
                f"error forwarding port {port} to pod {self.pod}, uid {self.uid}: failed to connect to "
                f"{self.host}:{port}: {e.strerror or e}",
            )
            await data.close()
            return

        async def to_pod() -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while chunk := await data.read():
                    writer.write(chunk)
                    await writer.drain()
                if writer.can_write_eof():
                    writer.write_eof()

        async def from_pod() -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while chunk := await reader.read(32 * 1024):
                    await data.write(chunk)

        up, down = asyncio.ensure_future(to_pod()), asyncio.ensure_future(from_pod())
        try:
            await down
            await data.close()
            await error.close()
            await up
        finally:
            up.cancel()
            writer.close()

    async def stop(self) -> None:
        for t in list(self.tasks):
            t.cancel()
        for t in list(self.tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t


async def _report(error: SpdyStream, message: str) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        await error.write(message.encode())
        await error.close()


async def serve_spdy_portforward(request: web.Request, host: str, pod: str, uid: str) -> web.StreamResponse:
    upgraded = await _upgrade(request, (PORTFORWARD_PROTOCOL,))
    if upgraded is None:
        return _bad_protocol(request, (PORTFORWARD_PROTOCOL,))
    resp, conn, _ = upgraded
    forwarder = _PortForwarder(host, pod, uid)
    session = SpdySession(conn.read, conn.write, forwarder.on_stream)
    try:
        await session.run()
    finally:
        await forwarder.stop()
        await session.close()
        conn.close()
    return resp


async def serve_tunnelled_portforward(request: web.Request, host: str, pod: str, uid: str) -> web.WebSocketResponse:
    """SPDY inside WebSocket binary messages (each message is a slice of the SPDY byte stream, no channel byte)."""
    ws = web.WebSocketResponse(protocols=(TUNNEL_PREFIX + PORTFORWARD_PROTOCOL,), compress=False, max_msg_size=0)
    await ws.prepare(request)
    read, write = binary_pipe(ws)

    forwarder = _PortForwarder(host, pod, uid)
    session = SpdySession(read, write, forwarder.on_stream)
    try:
        await session.run()
    finally:
        await forwarder.stop()
        await session.close()
        with contextlib.suppress(Exception):
            await ws.close()
    return ws


def wants_tunnel(request: web.Request) -> bool:
    protocols = request.headers.get("Sec-WebSocket-Protocol", "")
    return any(p.strip().startswith(TUNNEL_PREFIX) for p in protocols.split(","))
