"""The webhook client's transport against a real TLS server on 127.0.0.1 whose behaviour each test sets: calls reuse
one kept-alive connection, a chunked answer is put together, a kept-alive connection the server closed is replaced
without the caller seeing an error, `Connection: close` is honoured, a truncated answer fails."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography.x509.oid import ExtendedKeyUsageOID

from pykubeadm.apiserver.admission.webhook.transport import Pool, ProtocolError
from pykubeadm.pki.certs import AltNames, CertConfig, encode_cert_pem, new_cert_and_key, new_self_signed_ca
from pykubeadm.pki.keys import encode_private_key_pem, generate_private_key

pytestmark = pytest.mark.integration

Answer = Callable[[int, bytes], bytes]  # (request number on its connection, body) -> raw HTTP answer ('' closes)


@dataclass
class Server:
    answer: Answer
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    port: int = 0


def _tls(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    ca_key = generate_private_key()
    ca = new_self_signed_ca(CertConfig("transport-test-ca"), ca_key)
    cfg = CertConfig(
        "webhook",
        alt_names=AltNames(ips=(ipaddress.ip_address("127.0.0.1"),)),
        usages=(ExtendedKeyUsageOID.SERVER_AUTH,),
        not_after=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1),
    )
    cert, key = new_cert_and_key(ca, ca_key, cfg)
    (tmp_path / "tls.crt").write_bytes(encode_cert_pem(cert))
    (tmp_path / "tls.key").write_bytes(encode_private_key_pem(key))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.load_verify_locations(cadata=encode_cert_pem(ca).decode())
    return server, client


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Server, ssl.SSLContext]]:
    server_ctx, client_ctx = _tls(tmp_path)
    state = Server(answer=lambda n, body: ok(body))

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        n = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(
                    next(
                        line.split(b":")[1]
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                )
                body = await reader.readexactly(length)
                state.requests.append(head + body)
                out = state.answer(n, body)
                n += 1
                if not out:
                    break
                writer.write(out)
                await writer.drain()
                if b"Connection: close" in out:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_ctx)
    state.port = srv.sockets[0].getsockname()[1]
    async with srv:
        yield state, client_ctx


def ok(body: bytes, extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode()
        + body
    )


async def post(pool: Pool, server: Server, ctx: ssl.SSLContext, body: bytes = b'{"n":1}') -> tuple[int, bytes]:
    resp = await pool.post("127.0.0.1", server.port, "/hook?timeout=10s", body,
                           [("Content-Type", "application/json")], tls=ctx, server_name="127.0.0.1")  # fmt: skip
    return resp.status, resp.body


async def test_calls_reuse_one_kept_alive_connection(served: tuple[Server, ssl.SSLContext]) -> None:
    server, ctx = served
    pool = Pool()
    for i in range(5):
        assert await post(pool, server, ctx, b'{"i":%d}' % i) == (200, b'{"i":%d}' % i)
    assert server.connections == 1
    first = server.requests[0]
    assert first.startswith(b"POST /hook?timeout=10s HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{server.port}\r\n".encode() in first
    await pool.close()


async def test_a_chunked_answer_is_put_together(served: tuple[Server, ssl.SSLContext]) -> None:
    server, ctx = served
    server.answer = lambda n, body: (
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"a"\r\n5\r\n:"b"}\r\n0\r\n\r\n'
    )
    pool = Pool()
    assert await post(pool, server, ctx) == (200, b'{"a":"b"}')
    assert await post(pool, server, ctx) == (200, b'{"a":"b"}')
    assert server.connections == 1
    await pool.close()


async def test_a_kept_alive_connection_the_server_closed_is_replaced(served: tuple[Server, ssl.SSLContext]) -> None:
    server, ctx = served
    server.answer = lambda n, body: ok(body) if n == 0 else b""  # answers once per connection, then hangs up
    pool = Pool()
    for _ in range(3):
        assert await post(pool, server, ctx) == (200, b'{"n":1}')
    assert server.connections == 3
    await pool.close()


async def test_connection_close_is_honoured(served: tuple[Server, ssl.SSLContext]) -> None:
    server, ctx = served
    server.answer = lambda n, body: ok(body, "Connection: close\r\n")
    pool = Pool()
    assert await post(pool, server, ctx) == (200, b'{"n":1}')
    assert await post(pool, server, ctx) == (200, b'{"n":1}')
    assert server.connections == 2
    await pool.close()


async def test_a_truncated_answer_fails(served: tuple[Server, ssl.SSLContext]) -> None:
    server, ctx = served
    server.answer = lambda n, body: b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{}"
    pool = Pool()
    with pytest.raises(ProtocolError, match="EOF"):
        await post(pool, server, ctx)
    await pool.close()
