"""port-forward over WebSocket channels (v4.channel.k8s.io) on a loopback kubelet streaming server, to a real TCP
echo server standing in for the Pod: the port announcement on both channels, bytes both ways, and the 400s a client
gets for a missing or bad `port`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from pykubeadm.kubelet.streaming import add_streaming_routes
from pykubeadm.kubelet.streaming.wsportforward import ports_of
from pykubeadm.testing.webapp import serve_app


@dataclass
class Ref:
    pid: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    log_path: Path | None = None
    pod_ip: str = "127.0.0.1"
    enter_prefix: list[str] = field(default_factory=list)
    stdin: asyncio.StreamWriter | None = None
    stdin_once: bool = False


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


@pytest.fixture
async def echo_port() -> AsyncIterator[int]:
    server = await asyncio.start_server(_echo, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture
async def base() -> AsyncIterator[str]:
    def locate(namespace: str, pod: str, container: str) -> Ref | str:
        return Ref() if (namespace, pod) == ("ns", "p") else f'pod "{pod}" in namespace "{namespace}" not found'

    app = web.Application()
    add_streaming_routes(app.router, locate)
    async with serve_app(app) as url:
        yield url


async def test_bytes_go_both_ways_after_the_port_announcement(base: str, echo_port: int) -> None:
    url = f"{base}/portForward/ns/p?port={echo_port}"
    async with aiohttp.ClientSession() as s, s.ws_connect(url, protocols=["v4.channel.k8s.io"]) as ws:
        assert ws.protocol == "v4.channel.k8s.io"
        announced = echo_port.to_bytes(2, "little")
        async with asyncio.timeout(20):
            assert (await ws.receive_bytes()) == b"\x00" + announced  # data channel
            assert (await ws.receive_bytes()) == b"\x01" + announced  # error channel
            await ws.send_bytes(b"\x00hello")
            got = b""
            while got != b"hello":
                msg = await ws.receive_bytes()
                assert msg[0] == 0
                got += msg[1:]


async def test_a_missing_or_bad_port_is_a_bad_request(base: str) -> None:
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Protocol": "v4.channel.k8s.io",
    }
    async with aiohttp.ClientSession() as s:
        for query, text in (("", 'query parameter "port" is required'), ("?port=0", 'unable to parse "0" as a port')):
            async with s.get(f"{base}/portForward/ns/p{query}", headers=upgrade) as resp:
                assert resp.status == 400
                assert text in await resp.text()


def test_ports_may_repeat_and_be_comma_lists() -> None:
    assert ports_of(["8080", "81,82"]) == [8080, 81, 82]
    for bad in ("0", "65536", "http"):
        with pytest.raises(ValueError):
            ports_of([bad])
