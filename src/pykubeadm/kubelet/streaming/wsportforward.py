"""port-forward over WebSocket channels (`v4.channel.k8s.io`), as the official Python client's `portforward` speaks it.

The ports come in the query (`port`, repeated or comma-separated); port i has the data channel 2i and the error
channel 2i+1, and each channel's first message is the port number (2 bytes, little-endian). One TCP connection to the
Pod per port for the life of the WebSocket; a failure to connect is text on the port's error channel.
(kubectl does not use this: it tunnels SPDY, see `spdyserve.serve_tunnelled_portforward`.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

import aiohttp
from aiohttp import web

__all__ = ["PROTOCOLS", "ports_of", "serve_ws_portforward"]

PROTOCOLS = ("v4.channel.k8s.io", "channel.k8s.io")


def ports_of(values: Iterable[str]) -> list[int]:
    """The `port` query values (each may be a comma list) as ports; ValueError for anything else."""
    ports = []
    for value in values:
        for part in value.split(","):
            port = int(part)
            if not 0 < port < 65536:
                raise ValueError(part)
            ports.append(port)
    return ports


async def serve_ws_portforward(request: web.Request, host: str, pod: str, uid: str) -> web.StreamResponse:
    try:
        ports = ports_of(request.query.getall("port", []))
    except ValueError as e:
        raise web.HTTPBadRequest(text=f'unable to parse "{e}" as a port: must be 1-65535') from None
    if not ports:
        raise web.HTTPBadRequest(text='query parameter "port" is required')
    ws = web.WebSocketResponse(protocols=PROTOCOLS, compress=False, max_msg_size=0)
    await ws.prepare(request)
    for i, port in enumerate(ports):
        for channel in (2 * i, 2 * i + 1):
            await ws.send_bytes(bytes([channel]) + port.to_bytes(2, "little"))
    writers: dict[int, asyncio.StreamWriter] = {}
    pumps: list[asyncio.Task[None]] = []

    async def from_pod(channel: int, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(32 * 1024):
                await ws.send_bytes(bytes([channel]) + data)

    for i, port in enumerate(ports):
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError as e:
            message = f"error forwarding port {port} to pod {pod}, uid {uid}: failed to connect to {host}:{port}: "
            await ws.send_bytes(bytes([2 * i + 1]) + (message + (e.strerror or str(e))).encode())
            continue
        writers[2 * i] = writer
        pumps.append(asyncio.ensure_future(from_pod(2 * i, reader)))

    async def close_when_pod_side_done() -> None:
        # like the kubelet: the session ends when every forwarded connection has ended
        await asyncio.gather(*pumps, return_exceptions=True)
        await ws.close()

    closer = asyncio.ensure_future(close_when_pod_side_done())
    try:
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.BINARY or len(msg.data) < 2:
                continue
            to_pod = writers.get(msg.data[0])
            if to_pod is not None:
                to_pod.write(msg.data[1:])
                with contextlib.suppress(ConnectionError, OSError):
                    await to_pod.drain()
    finally:
        for task in [*pumps, closer]:
            task.cancel()
        for writer in writers.values():
            writer.close()
    return ws
