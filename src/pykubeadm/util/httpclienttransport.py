"""An httpx2 transport over the standard library's http.client, for the blocking clients: the commands' lightkube
clients (init, join, reset, token, upgrade, the lab's waits), token and file discovery, and kubeadm's health checks.

httpx's own transport runs every request through httpcore's connection pool: its first client imports httpcore with
h11, h2 and anyio and builds a TLS context with truststore, 60-90 ms of CPU in every command that talks to a cluster
(`init` and each `join` among them). http.client is already there. lightkube, httpx's request building,
authentication and response decoding stay as they are: only the bytes move through http.client. As httpx's transport
does, it keeps connections alive (a pool per scheme, host and port; a kept connection that has become readable, the
server having closed it, is dropped before a request would be sent on it), follows no redirect, leaves the content-encoding to httpx, streams the
body as it arrives (watches), and raises httpx's transport errors (ConnectError, ConnectTimeout, ReadTimeout, ...)
with the original error as their cause, so callers see no difference.
"""

from __future__ import annotations

import http.client
import select
import ssl
import threading
from collections.abc import Iterator

import httpx2

from pykubeadm.util.tlscontext import insecure_client_context

__all__ = ["HTTPClientTransport", "sync_http_client"]

#: Idle connections kept per scheme, host and port.
_MAX_IDLE = 10
_Key = tuple[str, str, int]


def sync_http_client(verify: ssl.SSLContext | bool, timeout: float) -> httpx2.Client:
    """A blocking httpx client over http.client: `verify` is the TLS context (False: no verification; True: the
    system's CAs). Proxy variables are ignored (the endpoints are the cluster's own)."""
    if verify is False:
        ctx = insecure_client_context()
    elif verify is True:
        ctx = ssl.create_default_context()
    else:
        ctx = verify
    return httpx2.Client(transport=HTTPClientTransport(ctx), timeout=timeout, trust_env=False)


def _mapped(exc: BaseException, request: httpx2.Request, connecting: bool) -> httpx2.TransportError:
    """httpx's exception for an http.client (or socket, or TLS) failure."""
    message = str(exc) or type(exc).__name__
    if isinstance(exc, TimeoutError):
        return (httpx2.ConnectTimeout if connecting else httpx2.ReadTimeout)(message, request=request)
    if isinstance(exc, http.client.HTTPException):
        return httpx2.RemoteProtocolError(message, request=request)
    if isinstance(exc, OSError):  # ssl.SSLError too: a failed handshake is a failed connect, as in httpx
        return (httpx2.ConnectError if connecting else httpx2.ReadError)(message, request=request)
    return httpx2.TransportError(message, request=request)


def _readable(fd: int) -> bool:
    """Whether an idle connection has something to read (or has been closed): poll, which has no limit on fd numbers."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class _Body(httpx2.SyncByteStream):
    """A response body read as it arrives; closing it gives the connection back when the body was read to its end."""

    def __init__(
        self,
        response: http.client.HTTPResponse,
        conn: http.client.HTTPConnection,
        transport: HTTPClientTransport,
        key: _Key,
        request: httpx2.Request,
    ) -> None:
        self._response = response
        self._conn = conn
        self._transport = transport
        self._key = key
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        try:
            while chunk := self._response.read1(64 * 1024):
                yield chunk
            if rest := self._response.read():  # at the end: read() marks the response done (read1 does not)
                yield rest
        except (OSError, http.client.HTTPException) as exc:
            raise _mapped(exc, self._request, connecting=False) from exc

    def close(self) -> None:
        if self._response.isclosed() and not self._response.will_close:
            self._transport._give_back(self._key, self._conn)
        else:
            self._response.close()
            self._conn.close()


class HTTPClientTransport(httpx2.BaseTransport):
    """Sends httpx requests over http.client connections, TLS per `ssl_context` (None: plain HTTP only)."""

    def __init__(self, ssl_context: ssl.SSLContext | None) -> None:
        self._ssl = ssl_context
        self._idle: dict[_Key, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    def _take(self, key: _Key) -> http.client.HTTPConnection | None:
        """A kept connection to `key` the server has not closed (an idle connection with something to read has been
        closed by the server, or is out of step: dropped)."""
        while True:
            with self._lock:
                idle = self._idle.get(key)
                conn = idle.pop() if idle else None
            if conn is None:
                return None
            if conn.sock is not None and not _readable(conn.sock.fileno()):
                return conn
            conn.close()

    def _give_back(self, key: _Key, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < _MAX_IDLE:
                idle.append(conn)
                return
        conn.close()

    def _new(self, key: _Key, request: httpx2.Request, timeout: float | None) -> http.client.HTTPConnection:
        scheme, host, port = key
        conn: http.client.HTTPConnection
        if scheme == "https":
            ctx = self._ssl if self._ssl is not None else ssl.create_default_context()
            conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=ctx)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            conn.connect()
        except OSError as exc:
            conn.close()
            raise _mapped(exc, request, connecting=True) from exc
        return conn

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        scheme = url.scheme
        if scheme not in ("http", "https"):
            raise httpx2.UnsupportedProtocol(f"Request URL has an unsupported protocol '{scheme}://'.", request=request)
        key = (scheme, url.host, url.port or (443 if scheme == "https" else 80))
        timeouts = request.extensions.get("timeout") or {}
        body = request.read()
        headers = list(request.headers.raw)
        if any(name.lower() == b"transfer-encoding" for name, _ in headers):  # streamed content, read whole above
            headers = [(n, v) for n, v in headers if n.lower() != b"transfer-encoding"]
            headers.append((b"Content-Length", str(len(body)).encode()))
        target = url.raw_path.decode("ascii")
        conn = self._take(key) or self._new(key, request, timeouts.get("connect"))
        try:
            assert conn.sock is not None
            conn.sock.settimeout(timeouts.get("read"))
            conn.putrequest(request.method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                conn.putheader(name.decode("latin-1"), value)
            conn.endheaders(body or None)
            response = conn.getresponse()
            # http.client decodes header bytes as latin-1: the same bytes go to httpx
            raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.msg.items()]
        except BaseException as exc:
            conn.close()
            if isinstance(exc, OSError | http.client.HTTPException):
                raise _mapped(exc, request, connecting=False) from exc
            raise
        return httpx2.Response(
            response.status,
            headers=raw,
            stream=_Body(response, conn, self, key, request),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (response.reason or "").encode("latin-1")},
        )

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()
