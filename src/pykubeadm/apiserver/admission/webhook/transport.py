"""The webhook client's transport: HTTP/1.1 POSTs over kept-alive (TLS) connections, pooled per endpoint.

kube-apiserver keeps a Go `http.Transport` per webhook client configuration, so a busy webhook costs one TLS handshake,
not one per request. This is the same at a per-call cost a Python apiserver can afford on its hot path (half of a
general-purpose client's): an asyncio stream per connection, the request written in one piece, the answer parsed by
httptools (llhttp: Content-Length, chunked, or until close), and the connection put back in its endpoint's pool
unless either side said `close`. A request that fails on a reused connection before any answer arrived is sent once
more on a new connection, as Go's transport retries it.

Failures: `ConnectError` (the TCP connect or the TLS handshake failed; `.cause` is the OSError/ssl.SSLError),
`ProtocolError` (a malformed or truncated answer, "EOF" when the server closed without one), OSError while talking;
the caller bounds the whole call with its deadline, and the connection in use is then closed, never reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from dataclasses import dataclass

import httptools

__all__ = ["ConnectError", "Pool", "ProtocolError", "Response"]

_Key = tuple[str, int, int, str]  # host, port, id of the TLS context (0: plain HTTP), TLS server name
_READ = 65536
_MAX_IDLE = 16  # kept-alive connections kept per endpoint


class ConnectError(Exception):
    """The connection could not be made; `cause` is the socket's or the TLS handshake's error."""

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


class ProtocolError(Exception):
    """The server's answer was not valid HTTP/1.1, or the connection ended before it was complete."""


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes


class _Stale(Exception):
    """A reused connection was found closed before the answer began: send again on a new one."""


class _Answer:
    """httptools' callbacks: the body's pieces and whether the message is complete."""

    def __init__(self) -> None:
        self.parser: httptools.HttpResponseParser | None = None
        self.chunks: list[bytes] = []
        self.headers_done = False
        self.framed = False  # Content-Length or chunked: the end is known without the connection closing
        self.done = False
        self.keep_alive = False

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self.framed = True

    def on_headers_complete(self) -> None:
        self.headers_done = True

    def on_body(self, data: bytes) -> None:
        self.chunks.append(data)

    def on_message_complete(self) -> None:
        self.done = True
        # asked now: once the callback returns, the parser has moved on to the next message
        self.keep_alive = self.parser is not None and self.parser.should_keep_alive()


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


def _head(target: str, authority: str, length: int, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"POST {target} HTTP/1.1", f"Host: {authority}", f"Content-Length: {length}"]
    lines += [f"{k}: {v}" for k, v in headers]
    text = "\r\n".join(lines) + "\r\n\r\n"
    if any(c in target + authority for c in " \r\n"):
        raise ProtocolError(f"invalid request target {target!r}")
    return text.encode("latin-1")


class Pool:
    """Idle kept-alive connections per endpoint. Not thread-safe: one event loop uses it."""

    def __init__(self) -> None:
        self._idle: dict[_Key, list[_Conn]] = {}

    async def post(
        self,
        host: str,
        port: int,
        target: str,
        body: bytes,
        headers: list[tuple[str, str]],
        *,
        tls: ssl.SSLContext | None,
        server_name: str,
    ) -> Response:
        """POST `body` to `target` (path and query) at host:port; TLS with `tls` verifying `server_name`."""
        key = (host, port, id(tls) if tls is not None else 0, server_name)
        authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        request = _head(target, authority, len(body), headers) + body
        while True:
            idle = self._idle.get(key)
            conn = idle.pop() if idle else None
            reused = conn is not None
            if conn is None:
                conn = await self._connect(host, port, tls, server_name)
            try:
                response, keep = await self._exchange(conn, request, reused)
            except _Stale:
                conn.close()
                continue
            except BaseException:  # a timeout/cancellation or an error mid-answer: this connection is done
                conn.close()
                raise
            pool = self._idle.setdefault(key, [])
            if keep and len(pool) < _MAX_IDLE:
                pool.append(conn)
            else:
                conn.close()
            return response

    @staticmethod
    async def _connect(host: str, port: int, tls: ssl.SSLContext | None, server_name: str) -> _Conn:
        try:
            reader, writer = await asyncio.open_connection(
                host, port, ssl=tls, server_hostname=server_name if tls is not None else None, limit=_READ
            )
        except (OSError, ssl.SSLError) as e:
            raise ConnectError(e) from None
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Conn(reader, writer)

    @staticmethod
    async def _exchange(conn: _Conn, request: bytes, reused: bool) -> tuple[Response, bool]:
        """Send the request, read the whole answer; (the response, whether the connection may be reused)."""
        try:
            conn.writer.write(request)
            await conn.writer.drain()
        except (ConnectionResetError, BrokenPipeError):
            if reused:
                raise _Stale from None
            raise
        answer = _Answer()
        parser = answer.parser = httptools.HttpResponseParser(answer)
        started = False
        while not answer.done:
            try:
                data = await conn.reader.read(_READ)
            except ConnectionResetError:
                if reused and not started:
                    raise _Stale from None
                raise
            if not data:
                if reused and not started:
                    raise _Stale
                if answer.headers_done and not answer.framed:  # the body ran until the server closed
                    return Response(parser.get_status_code(), b"".join(answer.chunks)), False
                raise ProtocolError("EOF")
            started = True
            try:
                parser.feed_data(data)
            except httptools.HttpParserUpgrade:
                raise ProtocolError("unexpected protocol upgrade") from None
            except httptools.HttpParserError as e:
                raise ProtocolError(f"malformed HTTP response: {e}") from None
        keep = answer.keep_alive and not conn.reader.at_eof()
        return Response(parser.get_status_code(), b"".join(answer.chunks)), keep

    async def close(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()
