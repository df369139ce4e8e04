"""switch_protocols and splice on a loopback aiohttp server: the 101 goes out before any upgraded byte (aiohttp holds
headers back), bytes the client sent right behind its request are not lost, and a splice copies both ways."""

from __future__ import annotations

import asyncio

from aiohttp import web

from pykubeadm.testing.webapp import serve_app
from pykubeadm.util.httpupgrade import splice, switch_protocols


async def test_switch_protocols_then_splice_with_an_echo() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp, conn = await switch_protocols(request, {"Upgrade": "websocket", "Connection": "Upgrade"})
        await conn.write(b"hello|")
        echo_r, echo_w = await asyncio.open_connection("127.0.0.1", echo_port)

        async def to_echo(data: bytes) -> None:
            echo_w.write(data)
            await echo_w.drain()

        async def from_echo() -> bytes:
            return await echo_r.read(1024)

        await splice(conn.read, conn.write, from_echo, to_echo)
        echo_w.close()
        conn.close()
        return resp

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(data.upper())
            await writer.drain()
        writer.close()

    echo_server = await asyncio.start_server(echo, "127.0.0.1", 0)
    echo_port = echo_server.sockets[0].getsockname()[1]
    app = web.Application()
    app.router.add_get("/", handler)
    try:
        async with serve_app(app) as url:
            port = int(url.rsplit(":", 1)[1])
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nearly|")
            async with asyncio.timeout(10):
                head = await reader.readuntil(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
                assert await reader.readexactly(len(b"hello|")) == b"hello|"
                assert await reader.readexactly(len(b"EARLY|")) == b"EARLY|"  # sent with the request, not lost
                writer.write(b"more")
                assert await reader.readexactly(4) == b"MORE"
                writer.write_eof()  # the client is done: the splice ends and the connection closes
                assert await reader.read() == b""
            writer.close()
    finally:
        echo_server.close()
        await echo_server.wait_closed()
