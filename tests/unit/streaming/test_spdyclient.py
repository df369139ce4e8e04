"""The SPDY exec client (what the API server's stream translator runs towards a kubelet) against a SPDY server session
over an in-memory byte pipe: the streams it opens and in which order, stdin copied and half-closed, terminal sizes as
JSON, stdout/stderr until the server half-closes them, the Status from the error stream, and the errors when the
server refuses a stream or the connection ends first. Against the real kubelet and containerd:
tests/integration/apiserver/test_exec_proxy.py and tests/integration/cri/test_kubelet_cri_pods.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest

from pykubeadm.streaming import spdy
from pykubeadm.streaming.remotecommand import StreamIO, StreamOptions
from pykubeadm.streaming.session import SpdySession, SpdyStream
from pykubeadm.streaming.spdyclient import StreamProtocolError, run_spdy_command

Pipe = tuple[Callable[[], Awaitable[bytes]], Callable[[bytes], Awaitable[None]]]


def pipe_pair() -> tuple[Pipe, Pipe]:
    """Two connected byte pipes (read, write): what one writes the other reads; b"" written is EOF."""
    a_to_b: asyncio.Queue[bytes] = asyncio.Queue()
    b_to_a: asyncio.Queue[bytes] = asyncio.Queue()

    def side(inbox: asyncio.Queue[bytes], outbox: asyncio.Queue[bytes]) -> Pipe:
        async def read() -> bytes:
            data = await inbox.get()
            if not data:
                inbox.put_nowait(b"")
            return data

        async def write(data: bytes) -> None:
            outbox.put_nowait(data)

        return read, write

    return side(b_to_a, a_to_b), side(a_to_b, b_to_a)


class Server:
    """A v4 remotecommand server: upper-cases stdin to stdout, records sizes, ends with `status` on the error stream."""

    def __init__(self, pipe: Pipe, status: bytes, tty: bool = False):
        self.opened: list[str] = []
        self.sizes: list[dict[str, int]] = []
        self.status = status
        self.wanted = {"error", "stdin", "stdout"} | ({"resize"} if tty else set())
        self.streams: dict[str, SpdyStream] = {}
        self.all_there = asyncio.Event()
        self.session = SpdySession(pipe[0], pipe[1], self.on_stream)

    def on_stream(self, stream: SpdyStream) -> None:
        kind = stream.header("streamType")
        self.opened.append(kind)
        self.streams[kind] = stream
        if self.wanted <= self.streams.keys():
            self.all_there.set()

    async def serve(self) -> None:
        await self.all_there.wait()
        if "resize" in self.streams:
            self.sizes.append(json.loads(await self.streams["resize"].read()))
        while data := await self.streams["stdin"].read():
            await self.streams["stdout"].write(data.upper())
        await self.streams["stdout"].close()
        await self.streams["error"].write(self.status)
        await self.streams["error"].close()
        await self.session.close()


def _io(lines: list[bytes], out: list[bytes]) -> StreamIO:
    pending = list(lines)

    async def stdin() -> bytes:
        return pending.pop(0) if pending else b""

    async def stdout(data: bytes) -> None:
        out.append(data)

    return StreamIO(stdout=stdout, stdin=stdin)


async def test_streams_stdin_stdout_resize_and_the_status() -> None:
    client_pipe, server_pipe = pipe_pair()
    exit3 = {"status": "Failure", "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode"}]}}
    server = Server(server_pipe, json.dumps(exit3).encode(), tty=True)
    serving = asyncio.ensure_future(server.session.run())
    work = asyncio.ensure_future(server.serve())
    out: list[bytes] = []
    io = _io([b"abc\n", b"def\n"], out)
    io.resizes.put_nowait((80, 24))
    opts = StreamOptions(stdin=True, stdout=True, stderr=False, tty=True)
    status = await asyncio.wait_for(run_spdy_command(*client_pipe, opts, io), 10)
    await client_pipe[1](b"")  # the connection closes
    await asyncio.wait_for(asyncio.gather(serving, work), 10)
    assert status == exit3
    assert b"".join(out) == b"ABC\nDEF\n"
    assert server.opened == ["error", "stdin", "stdout", "resize"]  # error first, as client-go opens them
    assert server.sizes == [{"Width": 80, "Height": 24}]


async def test_an_empty_error_stream_is_success() -> None:
    client_pipe, server_pipe = pipe_pair()
    server = Server(server_pipe, b"")
    serving = asyncio.gather(server.session.run(), server.serve())
    opts = StreamOptions(stdin=True, stdout=True, stderr=False, tty=False)
    status = await asyncio.wait_for(run_spdy_command(*client_pipe, opts, _io([b"x"], [])), 10)
    await client_pipe[1](b"")
    await asyncio.wait_for(serving, 10)
    assert status["status"] == "Success"


async def test_a_refused_stream_is_a_connection_error() -> None:
    client_pipe, server_pipe = pipe_pair()
    refusing = SpdySession(*server_pipe)  # a session without on_stream refuses (RST_STREAM) what the peer opens
    serving = asyncio.ensure_future(refusing.run())
    opts = StreamOptions(stdin=True, stdout=True, stderr=False, tty=False)
    with pytest.raises(ConnectionResetError, match=f"reset by the peer \\(status {spdy.RST_REFUSED_STREAM}\\)"):
        await asyncio.wait_for(run_spdy_command(*client_pipe, opts, _io([], [])), 10)
    await client_pipe[1](b"")
    await asyncio.wait_for(serving, 10)


async def test_the_connection_ending_before_the_status_is_an_error() -> None:
    client_pipe, server_pipe = pipe_pair()
    opened: list[str] = []
    gone: list[asyncio.Future[None]] = []

    def on_stream(stream: SpdyStream) -> None:
        opened.append(stream.header("streamType"))
        if stream.header("streamType") == "stdout":
            gone.append(asyncio.ensure_future(server_pipe[1](b"")))  # the server's side goes away

    server = SpdySession(server_pipe[0], server_pipe[1], on_stream)
    serving = asyncio.ensure_future(server.run())
    opts = StreamOptions(stdin=False, stdout=True, stderr=False, tty=False)
    with pytest.raises(ConnectionResetError):
        await asyncio.wait_for(run_spdy_command(*client_pipe, opts, _io([], [])), 10)
    assert opened == ["error", "stdout"]
    serving.cancel()


async def test_a_status_that_is_not_json_is_a_protocol_error() -> None:
    client_pipe, server_pipe = pipe_pair()
    server = Server(server_pipe, b"not json")
    serving = asyncio.gather(server.session.run(), server.serve())
    opts = StreamOptions(stdin=True, stdout=True, stderr=False, tty=False)
    with pytest.raises(StreamProtocolError, match="error stream protocol error"):
        await asyncio.wait_for(run_spdy_command(*client_pipe, opts, _io([], [])), 10)
    await client_pipe[1](b"")
    await asyncio.wait_for(serving, 10)
