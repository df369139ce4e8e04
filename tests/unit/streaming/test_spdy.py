"""SPDY/3.1 framing and the server session: byte layouts of the spec, header compression with the spec's dictionary,
round trips of every frame type, partial input, and the session's replies (SYN_REPLY, PING echo, FIN, RST, GOAWAY)."""

from __future__ import annotations

import asyncio
import struct
import zlib

import pytest

from pykubeadm.streaming import spdy
from pykubeadm.streaming.session import SpdySession, SpdyStream


def test_dictionary_is_the_specs() -> None:
    # SPDY/3 §2.6.10.1: 1423 bytes; zlib's dictionary id (Adler-32) is what a peer checks before inflating
    assert len(spdy.DICTIONARY) == 1423
    assert zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b"charset=iso-8859-1,utf-,*,enq=0.")


def test_header_block_layout() -> None:
    block = spdy.encode_header_block({"streamType": ["error"], "x": ["a", "b"]})
    assert block == (
        struct.pack(">I", 2)
        + struct.pack(">I", 10)
        + b"streamtype"  # names are lower case on the wire
        + struct.pack(">I", 5)
        + b"error"
        + struct.pack(">I", 1)
        + b"x"
        + struct.pack(">I", 3)
        + b"a\x00b"  # several values: NUL-separated
    )
    assert spdy.decode_header_block(block) == {"streamtype": ["error"], "x": ["a", "b"]}
    with pytest.raises(spdy.ProtocolError):
        spdy.decode_header_block(block[:-2])


def test_header_blocks_share_one_zlib_stream_primed_with_the_dictionary() -> None:
    enc = spdy.FrameEncoder()
    first = enc.encode(spdy.SynStream(1, {"streamtype": ["error"]}))
    second = enc.encode(spdy.SynStream(3, {"streamtype": ["stdout"]}))
    block = first[18:]  # 8 header + 10 SYN_STREAM fields
    cmf, flg = block[0], block[1]
    assert cmf & 0x0F == 8 and flg & 0x20  # deflate with FDICT set ...
    assert struct.unpack(">I", block[2:6])[0] == zlib.adler32(spdy.DICTIONARY)  # ... naming our dictionary
    # the second block continues the stream: no new zlib header, so only one shared decompressor can read it
    inflater = zlib.decompressobj(zdict=spdy.DICTIONARY)
    assert spdy.decode_header_block(inflater.decompress(block)) == {"streamtype": ["error"]}
    assert spdy.decode_header_block(inflater.decompress(second[18:])) == {"streamtype": ["stdout"]}
    with pytest.raises(zlib.error):
        zlib.decompressobj(zdict=spdy.DICTIONARY).decompress(second[18:])


def test_control_frame_header_layout() -> None:
    frame = spdy.FrameEncoder().encode(spdy.RstStream(5, 5))
    assert frame == bytes.fromhex("8003 0003 00 000008 00000005 00000005".replace(" ", ""))
    ping = spdy.FrameEncoder().encode(spdy.Ping(7))
    assert ping == bytes.fromhex("800300060000000400000007")
    goaway = spdy.FrameEncoder().encode(spdy.GoAway(9, 0))
    assert goaway == bytes.fromhex("80030007000000080000000900000000")


def test_data_frame_layout() -> None:
    frame = spdy.FrameEncoder().encode(spdy.DataFrame(3, b"hi", spdy.FLAG_FIN))
    assert frame == bytes.fromhex("0000000301000002") + b"hi"


@pytest.mark.parametrize(
    "frame",
    [
        spdy.DataFrame(1, b"x" * 70000),
        spdy.DataFrame(3, b"", spdy.FLAG_FIN),
        spdy.SynStream(1, {"streamtype": ["data"], "port": ["8080"], "requestid": ["0"]}, 0, 2, spdy.FLAG_FIN),
        spdy.SynReply(1, {}),
        spdy.HeadersFrame(1, {"a": ["b"]}),
        spdy.RstStream(1, spdy.RST_CANCEL),
        spdy.Settings([(0, 4, 100), (1, 7, 65536)]),
        spdy.Ping(1),
        spdy.GoAway(7, 0),
        spdy.WindowUpdate(1, 65536),
    ],
)
def test_round_trip(frame: spdy.Frame) -> None:
    assert spdy.FrameParser().feed(spdy.FrameEncoder().encode(frame)) == [frame]


def test_parser_waits_for_complete_frames() -> None:
    enc, parser = spdy.FrameEncoder(), spdy.FrameParser()
    wire = enc.encode(spdy.SynStream(1, {"streamtype": ["stdin"]})) + enc.encode(spdy.DataFrame(1, b"abc"))
    frames = []
    for i in range(len(wire)):  # one byte at a time
        frames += parser.feed(wire[i : i + 1])
    assert frames == [spdy.SynStream(1, {"streamtype": ["stdin"]}), spdy.DataFrame(1, b"abc")]


def test_bad_version_and_bad_compression_are_protocol_errors() -> None:
    with pytest.raises(spdy.ProtocolError):
        spdy.FrameParser().feed(bytes.fromhex("800200060000000400000001"))
    garbage = struct.pack(">HHI", 0x8003, 2, 8) + struct.pack(">I", 1) + b"\xff\xff\xff\xff"
    with pytest.raises(spdy.ProtocolError):
        spdy.FrameParser().feed(garbage)


def test_unknown_control_frames_are_ignored() -> None:
    assert spdy.FrameParser().feed(struct.pack(">HHI", 0x8003, 0x99, 2) + b"zz") == []


# --- the session --------------------------------------------------------------------------------------------------


class Peer:
    """The client side of a session, speaking through in-memory queues."""

    def __init__(self) -> None:
        self.to_server: asyncio.Queue[bytes] = asyncio.Queue()
        self.from_server = spdy.FrameParser()
        self.received: list[spdy.Frame] = []
        self.enc = spdy.FrameEncoder()
        self.arrived = asyncio.Event()

    def send(self, frame: spdy.Frame) -> None:
        self.to_server.put_nowait(self.enc.encode(frame))

    async def server_write(self, data: bytes) -> None:
        self.received += self.from_server.feed(data)
        self.arrived.set()

    async def wait_for(self, predicate) -> spdy.Frame:  # type: ignore[no-untyped-def]
        async with asyncio.timeout(10):
            while True:
                for f in self.received:
                    if predicate(f):
                        return f
                self.arrived.clear()
                await self.arrived.wait()


async def test_session_streams_ping_fin_rst_goaway() -> None:
    peer, streams = Peer(), []
    session = SpdySession(peer.to_server.get, peer.server_write, streams.append)
    runner = asyncio.ensure_future(session.run())
    peer.send(spdy.SynStream(1, {"streamtype": ["stdin"]}))
    reply = await peer.wait_for(lambda f: isinstance(f, spdy.SynReply))
    assert reply == spdy.SynReply(1, {})
    stream: SpdyStream = streams[0]
    assert stream.header("streamType") == "stdin"

    peer.send(spdy.DataFrame(1, b"hello"))
    peer.send(spdy.DataFrame(1, b"", spdy.FLAG_FIN))
    assert await stream.read() == b"hello"
    assert await stream.read() == b""  # FIN: end of input, and it stays so
    assert await stream.read() == b""

    await stream.write(b"out")
    await stream.close()
    await peer.wait_for(lambda f: f == spdy.DataFrame(1, b"", spdy.FLAG_FIN))
    assert spdy.DataFrame(1, b"out") in peer.received

    peer.send(spdy.Ping(11))
    assert await peer.wait_for(lambda f: isinstance(f, spdy.Ping)) == spdy.Ping(11)

    peer.send(spdy.SynStream(3, {"streamtype": ["stdout"]}))
    await peer.wait_for(lambda f: f == spdy.SynReply(3, {}))
    peer.send(spdy.RstStream(3, spdy.RST_CANCEL))
    assert await streams[1].read() == b""
    assert streams[1].reset
    with pytest.raises(ConnectionResetError):
        await streams[1].write(b"late")

    peer.send(spdy.DataFrame(99, b"?"))  # a stream nobody opened
    await peer.wait_for(lambda f: f == spdy.RstStream(99, spdy.RST_INVALID_STREAM))

    peer.send(spdy.GoAway(0, 0))
    await asyncio.wait_for(runner, 10)
    assert session.closed.is_set()


async def test_session_close_sends_goaway_and_ends_streams() -> None:
    peer, streams = Peer(), []
    session = SpdySession(peer.to_server.get, peer.server_write, streams.append)
    runner = asyncio.ensure_future(session.run())
    peer.send(spdy.SynStream(1, {"streamtype": ["error"]}, flags=spdy.FLAG_FIN))
    await peer.wait_for(lambda f: isinstance(f, spdy.SynReply))
    assert await streams[0].read() == b""  # SYN_STREAM with FIN: nothing will come
    await session.close()
    assert await peer.wait_for(lambda f: isinstance(f, spdy.GoAway)) == spdy.GoAway(1, 0)
    peer.to_server.put_nowait(b"")
    await asyncio.wait_for(runner, 10)


async def test_session_ends_on_connection_eof() -> None:
    peer, streams = Peer(), []
    session = SpdySession(peer.to_server.get, peer.server_write, streams.append)
    runner = asyncio.ensure_future(session.run())
    peer.send(spdy.SynStream(1, {"streamtype": ["stdin"]}))
    await peer.wait_for(lambda f: isinstance(f, spdy.SynReply))
    peer.to_server.put_nowait(b"")
    await asyncio.wait_for(runner, 10)
    assert await streams[0].read() == b""
