"""Take over an aiohttp server connection after `101 Switching Protocols`: the raw bytes both ways.

aiohttp upgrades only to WebSocket itself; SPDY (the kubelet's exec/port-forward) and the API server's upgrade-aware
proxy need the connection as a byte pipe. `switch_protocols` writes the 101 response and installs a payload parser
that hands every later byte to a `RawConnection`; `splice` copies two byte pipes into each other until both ends are
done. Used by the kubelet's SPDY streaming (kubelet/streaming) and the API server's pods/exec|attach|portforward proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web

__all__ = ["RawConnection", "splice", "switch_protocols"]

_HIGH_WATER = 1024 * 1024


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
