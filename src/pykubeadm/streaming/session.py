"""A SPDY/3.1 session over any byte transport, either side: streams, each a pair of byte pipes.

The server side (the kubelet's exec/attach with stream protocol v4 and port-forward with portforward.k8s.io, over the
raw upgraded connection or a WebSocket tunnel) accepts the streams the client opens: like spdystream as the kubelet
uses it, every SYN_STREAM is answered with a SYN_REPLY at once (the client waits for it). The client side (the API
server's stream translator, talking to a kubelet) opens streams with `open()`, which waits for the SYN_REPLY as
client-go does. Both echo the peer's PINGs; a FIN half-closes a stream, RST_STREAM and GOAWAY end streams; flow
control is not enforced (spdystream does not either). Framing is `spdy.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from pykubeadm.streaming import spdy

__all__ = ["SpdySession", "SpdyStream"]

log = logging.getLogger(__name__)

_CHUNK = 32 * 1024


class SpdyStream:
    """One client-opened stream: `read()` what the client sends (b"" at its FIN), `write()`/`close()` our side."""

    def __init__(self, session: SpdySession, stream_id: int, headers: spdy.Headers):
        self.session = session
        self.id = stream_id
        self.headers = headers
        self._chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self.remote_closed = False
        self.local_closed = False
        self.reset = False

    def header(self, name: str) -> str:
        values = self.headers.get(name.lower()) or [""]
        return values[0]

    def _receive(self, data: bytes, fin: bool) -> None:
        if self.remote_closed:
            return
        if data:
            self._chunks.put_nowait(data)
        if fin:
            self.remote_closed = True
            self._chunks.put_nowait(b"")

    def _abort(self) -> None:
        """The stream or the session ended; `reset` tells whether that came before the peer's FIN."""
        self.reset = self.reset or not self.remote_closed
        self.local_closed = True
        self._receive(b"", True)

    async def read(self) -> bytes:
        """The next chunk from the client; b"" once it half-closed (or the stream/session ended)."""
        chunk = await self._chunks.get()
        if not chunk:
            self._chunks.put_nowait(b"")  # stay at EOF for later readers
        return chunk

    async def write(self, data: bytes) -> None:
        if self.local_closed:
            raise ConnectionResetError(f"stream {self.id} is closed")
        for i in range(0, len(data), _CHUNK):
            await self.session.send(spdy.DataFrame(self.id, data[i : i + _CHUNK]))

    async def close(self) -> None:
        """Half-close our side (an empty DATA frame with FIN)."""
        if self.local_closed:
            return
        self.local_closed = True
        with contextlib.suppress(ConnectionError):
            await self.session.send(spdy.DataFrame(self.id, b"", spdy.FLAG_FIN))


class SpdySession:
    """One SPDY connection. With `on_stream`, the server side: it is called for each stream the client opens, after
    its SYN_REPLY went out. Without, the client side: `open()` streams; streams the peer opens are refused."""

    def __init__(
        self,
        read: Callable[[], Awaitable[bytes]],
        write: Callable[[bytes], Awaitable[None]],
        on_stream: Callable[[SpdyStream], None] | None = None,
    ):
        self._read = read
        self._write = write
        self._on_stream = on_stream
        self._client = on_stream is None
        self._next_id = 1  # a client's streams (and pings) are odd
        self._replies: dict[int, asyncio.Future[None]] = {}
        self._parser = spdy.FrameParser()
        self._encoder = spdy.FrameEncoder()
        self._lock = asyncio.Lock()
        self.streams: dict[int, SpdyStream] = {}
        self.closed = asyncio.Event()
        self._last_id = 0

    async def send(self, frame: spdy.Frame) -> None:
        if self.closed.is_set():
            raise ConnectionResetError("SPDY session closed")
        async with self._lock:  # one compression context: encode and write in the same order
            await self._write(self._encoder.encode(frame))

    async def run(self) -> None:
        """Read frames until the connection ends, the client says GOAWAY, or `close()`."""
        try:
            while not self.closed.is_set():
                data = await self._read()
                if not data:
                    break
                for frame in self._parser.feed(data):
                    await self._handle(frame)
        except (spdy.ProtocolError, ConnectionError) as e:
            log.info("SPDY session ended: %s", e)
        finally:
            self._end()

    async def open(self, headers: dict[str, str]) -> SpdyStream:
        """Client side: open a stream with `headers` and wait for the server's SYN_REPLY (ConnectionResetError when
        it resets the stream or the session ends first)."""
        if not self._client:
            raise RuntimeError("only the client side of a SPDY session opens streams")
        sid, self._next_id = self._next_id, self._next_id + 2
        stream = SpdyStream(self, sid, {k.lower(): [v] for k, v in headers.items()})
        self.streams[sid] = stream
        reply = self._replies[sid] = asyncio.get_running_loop().create_future()
        try:
            await self.send(spdy.SynStream(sid, dict(stream.headers)))
            await reply
        finally:
            self._replies.pop(sid, None)
        return stream

    def _end(self) -> None:
        self.closed.set()
        for stream in self.streams.values():
            stream._abort()
        self._refuse_replies("SPDY session closed")

    def _refuse_replies(self, why: str, sid: int | None = None) -> None:
        for key, waiting in list(self._replies.items()):
            if (sid is None or key == sid) and not waiting.done():
                waiting.set_exception(ConnectionResetError(why))

    async def _handle(self, frame: spdy.Frame) -> None:
        if isinstance(frame, spdy.DataFrame):
            stream = self.streams.get(frame.stream_id)
            if stream is None:
                await self.send(spdy.RstStream(frame.stream_id, spdy.RST_INVALID_STREAM))
                return
            stream._receive(frame.data, bool(frame.flags & spdy.FLAG_FIN))
        elif isinstance(frame, spdy.SynStream):
            if self._on_stream is None:
                await self.send(spdy.RstStream(frame.stream_id, spdy.RST_REFUSED_STREAM))
                return
            if frame.stream_id in self.streams or frame.stream_id % 2 == 0:
                await self.send(spdy.RstStream(frame.stream_id, spdy.RST_PROTOCOL_ERROR))
                return
            self._last_id = max(self._last_id, frame.stream_id)
            stream = SpdyStream(self, frame.stream_id, frame.headers)
            self.streams[frame.stream_id] = stream
            await self.send(spdy.SynReply(frame.stream_id, {}))
            if frame.flags & spdy.FLAG_FIN:
                stream._receive(b"", True)
            self._on_stream(stream)
        elif isinstance(frame, spdy.RstStream):
            stream = self.streams.get(frame.stream_id)
            if stream is not None:
                stream._abort()
            self._refuse_replies(f"stream {frame.stream_id} reset by the peer (status {frame.status})", frame.stream_id)
        elif isinstance(frame, spdy.SynReply):
            waiting = self._replies.get(frame.stream_id)
            if waiting is not None and not waiting.done():
                waiting.set_result(None)
            if frame.flags & spdy.FLAG_FIN and frame.stream_id in self.streams:
                self.streams[frame.stream_id]._receive(b"", True)
        elif isinstance(frame, spdy.Ping):
            if frame.ping_id % 2 == (0 if self._client else 1):  # the peer's ping: echo it (ours have our parity)
                await self.send(frame)
        elif isinstance(frame, spdy.GoAway):
            self.closed.set()
        elif isinstance(frame, spdy.HeadersFrame):
            stream = self.streams.get(frame.stream_id)
            if stream is not None:
                for k, v in frame.headers.items():
                    stream.headers.setdefault(k, []).extend(v)
                if frame.flags & spdy.FLAG_FIN:
                    stream._receive(b"", True)
        # SETTINGS, WINDOW_UPDATE: nothing to do without flow control

    async def close(self) -> None:
        """GOAWAY, then stop: every stream reads EOF and refuses writes."""
        if not self.closed.is_set():
            with contextlib.suppress(ConnectionError, OSError):
                await self.send(spdy.GoAway(self._last_id, 0))
        self._end()
