"""SPDY/3.1 framing: frames to bytes and back, with the zlib header-block compression of the spec's dictionary.

What `kubectl exec` (≤1.29) and `kubectl port-forward` speak after the `Upgrade: SPDY/3.1` handshake (the Go side is
moby/spdystream). Pure and synchronous: `FrameParser` turns received bytes into frames, `FrameEncoder` turns frames
into bytes; each side of a session owns one of each, because SPDY compresses all header blocks of one direction with
one shared zlib stream (spec §2.6.10). The asyncio session that uses them is `session.py`.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

__all__ = [
    "DICTIONARY",
    "FLAG_FIN",
    "FLAG_UNIDIRECTIONAL",
    "DataFrame",
    "Frame",
    "FrameEncoder",
    "FrameParser",
    "GoAway",
    "HeadersFrame",
    "Ping",
    "ProtocolError",
    "RstStream",
    "Settings",
    "SynReply",
    "SynStream",
    "WindowUpdate",
    "decode_header_block",
    "encode_header_block",
]

VERSION = 3
FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02

# control frame types (spec §2.6)
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9

# RST_STREAM status codes
RST_PROTOCOL_ERROR, RST_INVALID_STREAM, RST_REFUSED_STREAM, RST_CANCEL, RST_INTERNAL_ERROR = 1, 2, 3, 5, 6

_MAX_LENGTH = 0xFFFFFF  # 24-bit length field
_STREAM_ID_MASK = 0x7FFFFFFF


def _spec_dictionary() -> bytes:
    """The SPDY/3 header compression dictionary (spec §2.6.10.1): length-prefixed words, then plain text."""
    words = [
        *[
            "options",
            "head",
            "post",
            "put",
            "delete",
            "trace",
            "accept",
            "accept-charset",
            "accept-encoding",
            "accept-language",
            "accept-ranges",
            "age",
            "allow",
            "authorization",
            "cache-control",
            "connection",
            "content-base",
            "content-encoding",
            "content-language",
            "content-length",
            "content-location",
            "content-md5",
            "content-range",
            "content-type",
            "date",
            "etag",
            "expect",
            "expires",
            "from",
            "host",
            "if-match",
            "if-modified-since",
            "if-none-match",
            "if-range",
            "if-unmodified-since",
            "last-modified",
            "location",
            "max-forwards",
            "pragma",
            "proxy-authenticate",
            "proxy-authorization",
            "range",
            "referer",
            "retry-after",
            "server",
            "te",
            "trailer",
            "transfer-encoding",
            "upgrade",
            "user-agent",
            "vary",
            "via",
            "warning",
            "www-authenticate",
            "method",
            "get",
            "status",
        ],
        "200 OK",
        *["version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"],
    ]
    tail = (
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
        "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
        "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
        "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
        "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
        "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
    )
    return b"".join(struct.pack(">I", len(w)) + w.encode() for w in words) + tail.encode()


#: The dictionary both zlib streams of a session are primed with.
DICTIONARY = _spec_dictionary()


class ProtocolError(Exception):
    """The peer sent something that is not SPDY/3 (bad version, truncated header block, bad compression)."""


Headers = dict[str, list[str]]


@dataclass
class DataFrame:
    stream_id: int
    data: bytes = b""
    flags: int = 0


@dataclass
class SynStream:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    associated_id: int = 0
    priority: int = 0
    flags: int = 0


@dataclass
class SynReply:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    flags: int = 0


@dataclass
class HeadersFrame:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    flags: int = 0


@dataclass
class RstStream:
    stream_id: int
    status: int = RST_CANCEL


@dataclass
class Settings:
    entries: list[tuple[int, int, int]] = field(default_factory=list)  # (flags, id, value)
    flags: int = 0


@dataclass
class Ping:
    ping_id: int


@dataclass
class GoAway:
    last_good_stream_id: int = 0
    status: int = 0


@dataclass
class WindowUpdate:
    stream_id: int
    delta: int


Frame = DataFrame | SynStream | SynReply | HeadersFrame | RstStream | Settings | Ping | GoAway | WindowUpdate


def encode_header_block(headers: Headers) -> bytes:
    """The uncompressed name/value block: names lower-cased, several values of one name joined by NUL (§2.6.10)."""
    out = [struct.pack(">I", len(headers))]
    for name, values in headers.items():
        n, v = name.lower().encode(), b"\x00".join(x.encode() for x in values)
        out += [struct.pack(">I", len(n)), n, struct.pack(">I", len(v)), v]
    return b"".join(out)


def decode_header_block(block: bytes) -> Headers:
    """Parse an uncompressed name/value block; ProtocolError when it is truncated."""
    try:
        (count,) = struct.unpack_from(">I", block, 0)
        pos = 4
        out: Headers = {}
        for _ in range(count):
            (ln,) = struct.unpack_from(">I", block, pos)
            name = block[pos + 4 : pos + 4 + ln].decode()
            pos += 4 + ln
            (lv,) = struct.unpack_from(">I", block, pos)
            value = block[pos + 4 : pos + 4 + lv]
            if len(value) != lv:
                raise ProtocolError("truncated header value")
            pos += 4 + lv
            out.setdefault(name.lower(), []).extend(v.decode() for v in value.split(b"\x00"))
    except (struct.error, UnicodeDecodeError) as e:
        raise ProtocolError(f"bad header block: {e}") from None
    return out


def _control(kind: int, flags: int, payload: bytes) -> bytes:
    if len(payload) > _MAX_LENGTH:
        raise ValueError("frame too large")
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


class FrameEncoder:
    """Frames → bytes for one direction of a session (owns that direction's header compressor)."""

    def __init__(self) -> None:
        self._z = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)

    def _headers(self, headers: Headers) -> bytes:
        return self._z.compress(encode_header_block(headers)) + self._z.flush(zlib.Z_SYNC_FLUSH)

    def encode(self, frame: Frame) -> bytes:
        if isinstance(frame, DataFrame):
            if len(frame.data) > _MAX_LENGTH:
                raise ValueError("frame too large")
            return struct.pack(">II", frame.stream_id & _STREAM_ID_MASK, (frame.flags << 24) | len(frame.data)) + (
                frame.data
            )
        if isinstance(frame, SynStream):
            head = struct.pack(
                ">IIBB",
                frame.stream_id & _STREAM_ID_MASK,
                frame.associated_id & _STREAM_ID_MASK,
                frame.priority << 5,
                0,
            )
            return _control(SYN_STREAM, frame.flags, head + self._headers(frame.headers))
        if isinstance(frame, SynReply):
            head = struct.pack(">I", frame.stream_id & _STREAM_ID_MASK)
            return _control(SYN_REPLY, frame.flags, head + self._headers(frame.headers))
        if isinstance(frame, HeadersFrame):
            head = struct.pack(">I", frame.stream_id & _STREAM_ID_MASK)
            return _control(HEADERS, frame.flags, head + self._headers(frame.headers))
        if isinstance(frame, RstStream):
            return _control(RST_STREAM, 0, struct.pack(">II", frame.stream_id & _STREAM_ID_MASK, frame.status))
        if isinstance(frame, Settings):
            body = struct.pack(">I", len(frame.entries)) + b"".join(
                struct.pack(">II", (f << 24) | (i & 0xFFFFFF), v) for f, i, v in frame.entries
            )
            return _control(SETTINGS, frame.flags, body)
        if isinstance(frame, Ping):
            return _control(PING, 0, struct.pack(">I", frame.ping_id))
        if isinstance(frame, GoAway):
            return _control(GOAWAY, 0, struct.pack(">II", frame.last_good_stream_id & _STREAM_ID_MASK, frame.status))
        if isinstance(frame, WindowUpdate):
            return _control(
                WINDOW_UPDATE, 0, struct.pack(">II", frame.stream_id & _STREAM_ID_MASK, frame.delta & _STREAM_ID_MASK)
            )
        raise TypeError(f"not a SPDY frame: {frame!r}")


class FrameParser:
    """Bytes → frames for one direction of a session (owns that direction's header decompressor)."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._z = zlib.decompressobj(zdict=DICTIONARY)

    def _headers(self, compressed: bytes) -> Headers:
        try:
            block = self._z.decompress(compressed)
        except zlib.error as e:
            raise ProtocolError(f"header block decompression failed: {e}") from None
        return decode_header_block(block)

    def feed(self, data: bytes) -> list[Frame]:
        """Add received bytes; return every frame now complete (a partial frame waits for more bytes)."""
        self._buf += data
        frames: list[Frame] = []
        while len(self._buf) >= 8:
            word, flags_len = struct.unpack_from(">II", self._buf, 0)
            length = flags_len & 0xFFFFFF
            if len(self._buf) < 8 + length:
                break
            payload = bytes(self._buf[8 : 8 + length])
            del self._buf[: 8 + length]
            frame = self._frame(word, flags_len >> 24, payload)
            if frame is not None:
                frames.append(frame)
        return frames

    def _frame(self, word: int, flags: int, p: bytes) -> Frame | None:
        if not word & 0x80000000:
            return DataFrame(word & _STREAM_ID_MASK, p, flags)
        version, kind = (word >> 16) & 0x7FFF, word & 0xFFFF
        if version != VERSION:
            raise ProtocolError(f"unsupported SPDY version {version}")
        try:
            if kind == SYN_STREAM:
                sid, assoc, pri, _slot = struct.unpack_from(">IIBB", p, 0)
                return SynStream(sid & _STREAM_ID_MASK, self._headers(p[10:]), assoc & _STREAM_ID_MASK, pri >> 5, flags)
            if kind == SYN_REPLY:
                (sid,) = struct.unpack_from(">I", p, 0)
                return SynReply(sid & _STREAM_ID_MASK, self._headers(p[4:]), flags)
            if kind == HEADERS:
                (sid,) = struct.unpack_from(">I", p, 0)
                return HeadersFrame(sid & _STREAM_ID_MASK, self._headers(p[4:]), flags)
            if kind == RST_STREAM:
                sid, status = struct.unpack_from(">II", p, 0)
                return RstStream(sid & _STREAM_ID_MASK, status)
            if kind == SETTINGS:
                (count,) = struct.unpack_from(">I", p, 0)
                entries = []
                for i in range(count):
                    fid, value = struct.unpack_from(">II", p, 4 + 8 * i)
                    entries.append((fid >> 24, fid & 0xFFFFFF, value))
                return Settings(entries, flags)
            if kind == PING:
                return Ping(struct.unpack_from(">I", p, 0)[0])
            if kind == GOAWAY:
                sid, status = struct.unpack_from(">II", p, 0) if len(p) >= 8 else (*struct.unpack_from(">I", p, 0), 0)
                return GoAway(sid & _STREAM_ID_MASK, status)
            if kind == WINDOW_UPDATE:
                sid, delta = struct.unpack_from(">II", p, 0)
                return WindowUpdate(sid & _STREAM_ID_MASK, delta & _STREAM_ID_MASK)
        except struct.error as e:
            raise ProtocolError(f"truncated control frame type {kind}: {e}") from None
        return None  # unknown control frames are ignored (§2.2.1)
