"""Take over an aiohttp server connection after `101 Switching Protocols`: the raw bytes both ways.

aiohttp upgrades only to WebSocket itself; SPDY (the kubelet's exec/port-forward) and the API server's upgrade-aware
proxy need the connection as a byte pipe. `switch_protocols` writes the 101 response and installs a payload parser
that hands every later byte to a `RawConnection`; `splice` copies two byte pipes into each other until both ends are
done. Used by the kubelet's SPDY streaming (kubelet/streaming) and the API server's pods/exec|attach|portforward proxy.
`proxy_upgrade` forwards an upgrade request to another server and splices the two connections once it answers 101
(the kubelet proxying exec/attach/port-forward to its container runtime's streaming server).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web

__all__ = [
    "UPGRADE_REQUEST_HEADERS",
    "UPGRADE_RESPONSE_HEADERS",
    "RawConnection",
    "proxy_upgrade",
    "read_body",
    "read_response_head",
    "request_upgrade",
    "splice",
    "switch_protocols",
]

_HIGH_WATER = 1024 * 1024
_HEAD_LIMIT = 64 * 1024
#: Request headers an upgrade needs on the other side (credentials and the rest stay here).
UPGRADE_REQUEST_HEADERS = (
    "upgrade",
    "connection",
    "x-stream-protocol-version",
    "user-agent",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
)
#: Headers of the other side's 101 passed back to the client.
UPGRADE_RESPONSE_HEADERS = (
    "upgrade",
    "connection",
    "x-stream-protocol-version",
    "sec-websocket-accept",
    "sec-websocket-protocol",
)


class _Feeder:
    """The payload parser aiohttp calls with each chunk of an upgraded connection."""

    def __init__(self, conn: RawConnection):
        self.conn = conn

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self.conn._received(data)
        return False, b""

    def feed_eof(self) -> None:
        self.conn._received(b"")


class RawConnection:
    """The client's bytes after the upgrade (`read()`, b"" at EOF) and a way back (`write()`, `close()`)."""

    def __init__(self, request: web.Request):
        self._transport = request.transport
        self._protocol = request.protocol
        self._chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self._queued = 0
        self._paused = False
        self.eof = False

    def _received(self, data: bytes) -> None:
        if self.eof:
            return
        if not data:
            self.eof = True
        self._chunks.put_nowait(data)
        self._queued += len(data)
        if self._queued > _HIGH_WATER and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()

    async def read(self) -> bytes:
        chunk = await self._chunks.get()
        if not chunk:
            self._chunks.put_nowait(b"")
        self._queued -= len(chunk)
        if self._paused and self._queued < _HIGH_WATER // 2 and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return chunk

    async def write(self, data: bytes) -> None:
        if self._transport is None or self._transport.is_closing():
            raise ConnectionResetError("connection closed")
        self._transport.write(data)
        await self._protocol._drain_helper()  # aiohttp's own writers wait on this

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
        self._received(b"")


async def switch_protocols(
    request: web.Request, headers: Mapping[str, str]
) -> tuple[web.StreamResponse, RawConnection]:
    """Answer `101 Switching Protocols` with `headers` and return the connection as raw bytes."""
    resp = web.StreamResponse(status=101, headers=dict(headers))
    resp.force_close()
    writer = await resp.prepare(request)
    if writer is not None:
        writer.send_headers()  # aiohttp holds headers back until a body write; there will be none
        await writer.drain()
    conn = RawConnection(request)
    # aiohttp annotates the parser as its WebSocketReader, yet only calls feed_data/feed_eof (which _Feeder has)
    request.protocol.set_parser(_Feeder(conn))  # type: ignore[arg-type]
    return resp, conn


async def splice(
    a_read: Callable[[], Awaitable[bytes]],
    a_write: Callable[[bytes], Awaitable[None]],
    b_read: Callable[[], Awaitable[bytes]],
    b_write: Callable[[bytes], Awaitable[None]],
) -> None:
    """Splice endpoint a (`a_read` from it, `a_write` to it) with endpoint b: a's bytes to b, b's to a; when either
    direction ends (EOF or error), stop both."""

    async def pump(read: Callable[[], Awaitable[bytes]], write: Callable[[bytes], Awaitable[None]]) -> None:
        with contextlib.suppress(ConnectionError, OSError, asyncio.IncompleteReadError):
            while True:
                data = await read()
                if not data:
                    return
                await write(data)

    tasks = [asyncio.ensure_future(pump(a_read, b_write)), asyncio.ensure_future(pump(b_read, a_write))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t


async def read_response_head(reader: asyncio.StreamReader) -> tuple[int, list[tuple[str, str]]]:
    """An HTTP response's status and headers (ValueError when the head is over 64 KiB)."""
    raw = await reader.readuntil(b"\r\n\r\n")
    if len(raw) > _HEAD_LIMIT:
        raise ValueError("response head too large")
    lines = raw.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = []
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers.append((k.strip(), v.strip()))
    return status, headers


async def request_upgrade(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    method: str,
    target: str,
    host: str,
    headers: list[tuple[str, str]],
) -> tuple[int, list[tuple[str, str]]]:
    """Send an upgrade request (no body) on a dialled connection; the answer's status and headers."""
    head = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Content-Length: 0", *(f"{k}: {v}" for k, v in headers)]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
    await writer.drain()
    return await read_response_head(reader)


async def read_body(reader: asyncio.StreamReader, headers: list[tuple[str, str]]) -> bytes:
    """The body of a response that did not upgrade (at most 64 KiB, waiting at most 10 s; b"" when it breaks off)."""
    length = next((int(v) for k, v in headers if k.lower() == "content-length" and v.isdigit()), None)
    with contextlib.suppress(asyncio.IncompleteReadError, TimeoutError, ConnectionError):
        return await asyncio.wait_for(
            reader.readexactly(min(length, _HEAD_LIMIT)) if length is not None else reader.read(_HEAD_LIMIT), 10
        )
    return b""


async def proxy_upgrade(request: web.Request, host: str, port: int, target: str) -> web.StreamResponse:
    """Send `request`'s upgrade (its method, the upgrade headers) to http://host:port`target`; on 101 answer the
    client with the other side's 101 and splice both connections until either ends; otherwise pass the other side's
    status and body back. OSError when the other side cannot be dialled."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
    try:
        forwarded = [(k, v) for k, v in request.headers.items() if k.lower() in UPGRADE_REQUEST_HEADERS]
        status, headers = await asyncio.wait_for(
            request_upgrade(reader, writer, request.method, target, f"{host}:{port}", forwarded), 30
        )
        if status != 101:
            body = await read_body(reader, headers)
            ctype = next((v for k, v in headers if k.lower() == "content-type"), "text/plain; charset=utf-8")
            return web.Response(status=status, body=body, headers={"Content-Type": ctype})
        resp, conn = await switch_protocols(
            request, {k: v for k, v in headers if k.lower() in UPGRADE_RESPONSE_HEADERS}
        )

        async def to_other(data: bytes) -> None:
            writer.write(data)
            await writer.drain()

        async def from_other() -> bytes:
            return await reader.read(64 * 1024)

        await splice(conn.read, conn.write, from_other, to_other)
        conn.close()
        return resp
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
