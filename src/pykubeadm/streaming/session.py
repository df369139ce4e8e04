"""A SPDY/3.1 server session over any byte transport: streams the client opens, each a pair of byte pipes.

Used by the kubelet's exec/attach (stream protocol v4) and port-forward (portforward.k8s.io) handlers, over the raw
upgraded connection or over a WebSocket tunnel. Like spdystream as the kubelet uses it: every SYN_STREAM is accepted
with a SYN_REPLY at once (the client waits for it), PINGs are echoed, a FIN half-closes a stream, RST_STREAM and
GOAWAY end streams; flow control is not enforced (spdystream does not either). Framing is `spdy.py`.
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
        self.reset = self.local_closed = True
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
    """Server side of one SPDY connection; `on_stream` is called for each new stream after its SYN_REPLY went out."""

    def __init__(
        self,
        read: Callable[[], Awaitable[bytes]],
        write: Callable[[bytes], Awaitable[None]],
        on_stream: Callable[[SpdyStream], None],
    ):
        self._read = read
        self._write = write
        self._on_stream = on_stream
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

    def _end(self) -> None:
        self.closed.set()
        for stream in self.streams.values():
            stream._abort()

    async def _handle(self, frame: spdy.Frame) -> None:
        if isinstance(frame, spdy.DataFrame):
            stream = self.streams.get(frame.stream_id)
            if stream is None:
                await self.send(spdy.RstStream(frame.stream_id, spdy.RST_INVALID_STREAM))
                return
            stream._receive(frame.data, bool(frame.flags & spdy.FLAG_FIN))
        elif isinstance(frame, spdy.SynStream):
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
        elif isinstance(frame, spdy.Ping):
            if frame.ping_id % 2 == 1:  # the client's ping: echo it (ours would be even)
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
        # SETTINGS, WINDOW_UPDATE, SYN_REPLY: nothing to do for a server without flow control

    async def close(self) -> None:
        """GOAWAY, then stop: every stream reads EOF and refuses writes."""
        if not self.closed.is_set():
            with contextlib.suppress(ConnectionError, OSError):
                await self.send(spdy.GoAway(self._last_id, 0))
        self._end()
