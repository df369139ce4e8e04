"""The client side of an exec/attach session over SPDY (stream protocol `v4.channel.k8s.io`), as client-go's SPDY
executor runs it: on a connection the server has upgraded, open the error stream, then stdin, stdout, stderr and
resize as the options ask (each waits for the server's reply); copy the caller's stdin in (half-closing the stream at
its end), the terminal sizes in as JSON, stdout/stderr out until the server half-closes them; then the error stream's
content is the session's Status (empty: Success).

The API server's stream translator drives it with a WebSocket client's streams (`wsserve`), like kube-apiserver's
StreamTranslatorProxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from pykubeadm.streaming.remotecommand import StreamIO, StreamOptions, success_status
from pykubeadm.streaming.session import SpdySession, SpdyStream

__all__ = ["PROTOCOL", "StreamProtocolError", "run_spdy_command"]

#: The stream protocol this client speaks (every kubelet and CRI streaming server since Kubernetes 1.5 does).
PROTOCOL = "v4.channel.k8s.io"


class StreamProtocolError(Exception):
    """The server's error stream held something that is not a Status."""


async def _copy_out(stream: SpdyStream, write: Callable[[bytes], Awaitable[None]]) -> None:
    while data := await stream.read():
        with contextlib.suppress(ConnectionError, OSError):
            await write(data)


async def _copy_in(read: Callable[[], Awaitable[bytes]], stream: SpdyStream) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await read():
            await stream.write(data)
        await stream.close()  # the client's stdin ended: the command reads EOF


async def _send_sizes(io: StreamIO, stream: SpdyStream) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while True:
            width, height = await io.resizes.get()
            await stream.write(json.dumps({"Width": width, "Height": height}).encode())


async def _read_all(stream: SpdyStream) -> bytes:
    chunks = []
    while data := await stream.read():
        chunks.append(data)
    return b"".join(chunks)


async def run_spdy_command(
    read: Callable[[], Awaitable[bytes]],
    write: Callable[[bytes], Awaitable[None]],
    opts: StreamOptions,
    io: StreamIO,
) -> dict[str, Any]:
    """Run the session over the upgraded connection (`read` b"" at its end, `write`); returns the server's Status.
    ConnectionResetError when the server refuses a stream or the connection ends before the Status;
    StreamProtocolError when the Status is not one."""
    session = SpdySession(read, write)
    reader = asyncio.ensure_future(session.run())
    side: list[asyncio.Future[None]] = []
    try:
        error = await session.open({"streamType": "error"})
        streams = {}
        for name, wanted in (
            ("stdin", opts.stdin),
            ("stdout", opts.stdout),
            ("stderr", opts.stderr),
            ("resize", opts.tty),
        ):
            if wanted:
                streams[name] = await session.open({"streamType": name})
        if "stdin" in streams and io.stdin is not None:
            side.append(asyncio.ensure_future(_copy_in(io.stdin, streams["stdin"])))
        if "resize" in streams:
            side.append(asyncio.ensure_future(_send_sizes(io, streams["resize"])))
        outs = [
            _copy_out(streams[name], writer)
            for name, writer in (("stdout", io.stdout), ("stderr", io.stderr))
            if name in streams and writer is not None
        ]
        status, _ = await asyncio.gather(_read_all(error), asyncio.gather(*outs))
        if not status and error.reset:
            raise ConnectionResetError("the SPDY connection ended before the session's status")
    finally:
        for task in side:
            task.cancel()
        await session.close()
        reader.cancel()
        for task in [*side, reader]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    if not status:
        return success_status()
    try:
        decoded = json.loads(status)
    except ValueError as e:
        raise StreamProtocolError(f"error stream protocol error: {e} in {status!r}") from None
    if not isinstance(decoded, dict):
        raise StreamProtocolError(f"error stream protocol error: not a Status: {status!r}")
    return decoded
