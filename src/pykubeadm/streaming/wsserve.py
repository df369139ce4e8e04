"""exec/attach over WebSocket: the channel protocols `v5.channel.k8s.io` and `v4.channel.k8s.io` (kubectl ≥ 1.30).

Every data message (binary, or text: the official Python client sends a str as one) starts with its channel: 0 stdin,
1 stdout, 2 stderr, 3 error (the final Status, JSON), 4 resize (`{"Width":W,"Height":H}`), and in v5 255 close
(`[255, 0]` half-closes stdin). The server ends the session by sending the Status on channel 3 and a normal close.
Framing is aiohttp's. `binary_pipe` turns a WebSocket's binary messages into a byte pipe: kubectl ≥ 1.31 tunnels
port-forward's SPDY that way (subprotocol `SPDY/3.1+portforward.k8s.io`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web

from pykubeadm.streaming.remotecommand import StreamIO, StreamOptions

__all__ = [
    "CLOSE",
    "ERROR",
    "PROTOCOLS",
    "RESIZE",
    "STDERR",
    "STDIN",
    "STDOUT",
    "TUNNEL_PREFIX",
    "V4",
    "V5",
    "binary_pipe",
    "is_websocket",
    "serve_websocket",
]

V5, V4 = "v5.channel.k8s.io", "v4.channel.k8s.io"
#: Channel protocols we speak, best first.
PROTOCOLS = (V5, V4)
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
#: The WebSocket subprotocol prefix of SPDY tunnelled in binary messages (`SPDY/3.1+portforward.k8s.io`).
TUNNEL_PREFIX = "SPDY/3.1+"


def is_websocket(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


def _frame_bytes(msg: aiohttp.WSMessage) -> bytes:
    """A data message's bytes, channel first. Like the kubelet (wsstream), text messages count too: the official
    Python client sends what it is given as a str in a text message (`write_stdin("ls\\n")`); their bytes are the
    UTF-8 on the wire."""
    if msg.type == aiohttp.WSMsgType.BINARY:
        return bytes(msg.data)
    if msg.type == aiohttp.WSMsgType.TEXT:
        return str(msg.data).encode()
    return b""


def binary_pipe(ws: web.WebSocketResponse) -> tuple[Callable[[], Awaitable[bytes]], Callable[[bytes], Awaitable[None]]]:
    """(read, write) over a WebSocket's binary messages, each a slice of one byte stream with no channel byte:
    `read()` is b"" once the WebSocket closes."""

    async def read() -> bytes:
        while True:
            msg = await ws.receive()
            if msg.type == aiohttp.WSMsgType.BINARY:
                if msg.data:
                    return bytes(msg.data)
                continue
            if msg.type in (
                aiohttp.WSMsgType.CLOSE,
                aiohttp.WSMsgType.CLOSED,
                aiohttp.WSMsgType.CLOSING,
                aiohttp.WSMsgType.ERROR,
            ):
                return b""

    async def write(data: bytes) -> None:
        await ws.send_bytes(data)

    return read, write


def parse_resize(payload: bytes) -> tuple[int, int] | None:
    """`{"Width":80,"Height":24}` → (80, 24); None when it is not a size."""
    try:
        size = json.loads(payload)
        return int(size["Width"]), int(size["Height"])
    except (ValueError, KeyError, TypeError):
        return None


async def serve_websocket(
    request: web.Request,
    opts: StreamOptions,
    run: Callable[[StreamIO], Awaitable[dict[str, Any]]],
    protocols: tuple[str, ...] = PROTOCOLS,
    announce: bool = False,
) -> web.WebSocketResponse:
    """Upgrade (to one of `protocols`), run the session with the client's channels, send its Status on the error
    channel, close. `announce`: first an empty message on the lowest channel the server writes (stdout, stderr, else
    error), as kube-apiserver's stream translator tells the client the session is established."""
    ws = web.WebSocketResponse(protocols=protocols, compress=False, max_msg_size=0, autoping=True)
    await ws.prepare(request)
    if ws.ws_protocol not in protocols:
        await ws.close(code=aiohttp.WSCloseCode.PROTOCOL_ERROR, message=b"unsupported channel protocol")
        return ws
    if announce:
        await ws.send_bytes(bytes([STDOUT if opts.stdout else STDERR if opts.stderr else ERROR]))
    stdin: asyncio.Queue[bytes] = asyncio.Queue()

    def writer(channel: int) -> Callable[[bytes], Awaitable[None]]:
        async def write(data: bytes) -> None:
            await ws.send_bytes(bytes([channel]) + data)

        return write

    async def read_stdin() -> bytes:
        data = await stdin.get()
        if not data:
            stdin.put_nowait(b"")
        return data

    io = StreamIO(
        stdout=writer(STDOUT) if opts.stdout else None,
        stderr=writer(STDERR) if opts.stderr else None,
        stdin=read_stdin if opts.stdin else None,
    )

    async def demux() -> None:
        async for msg in ws:
            data = _frame_bytes(msg)
            if not data:
                continue
            channel, payload = data[0], data[1:]
            if channel == STDIN and payload:
                stdin.put_nowait(payload)
            elif channel == RESIZE:
                size = parse_resize(payload)
                if size is not None:
                    io.resizes.put_nowait(size)
            elif channel == CLOSE and ws.ws_protocol == V5 and payload[:1] == bytes([STDIN]):
                stdin.put_nowait(b"")

    session = asyncio.ensure_future(run(io))
    reader = asyncio.ensure_future(demux())
    try:
        await asyncio.wait([session, reader], return_when=asyncio.FIRST_COMPLETED)
        stdin.put_nowait(b"")
        if not session.done():  # the client went away first: stop the command
            session.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await session
            return ws
        status = session.result()
        with contextlib.suppress(ConnectionError, OSError):
            await ws.send_bytes(bytes([ERROR]) + json.dumps(status).encode())
        await ws.close()
    finally:
        for t in (session, reader):
            t.cancel()
        for t in (session, reader):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
    return ws
