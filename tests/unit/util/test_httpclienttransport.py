"""util.httpclienttransport: blocking httpx requests sent through http.client, against real HTTP and HTTPS servers:
headers and body as given, content-encoding decoded once by httpx, connections kept alive (and a connection the server
closed not used again), streamed bodies as they arrive, no redirect followed, httpx's transport errors."""

from __future__ import annotations

import gzip
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest

from pykubeadm.controllers.app.serving import self_signed_pair
from pykubeadm.testing.etcd import free_port
from pykubeadm.util.httpclienttransport import sync_http_client


class _Server:
    """An HTTP/1.1 server on 127.0.0.1 whose handler is `handle(request_handler)`; the client ports it saw."""

    def __init__(self, handle: Callable[[BaseHTTPRequestHandler], None], tls: ssl.SSLContext | None = None) -> None:
        ports: list[int] = []
        self.ports = ports

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                ports.append(self.client_address[1])
                handle(self)

            do_POST = do_GET

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def _reply(handler: BaseHTTPRequestHandler, body: bytes, status: int = 200, **headers: str) -> None:
    handler.send_response(status)
    for name, value in {"Content-Length": str(len(body)), **headers}.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture
def serve() -> Iterator[Callable[..., _Server]]:
    servers: list[_Server] = []

    def start(handle: Callable[[BaseHTTPRequestHandler], None], tls: ssl.SSLContext | None = None) -> _Server:
        servers.append(_Server(handle, tls))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def test_the_request_goes_as_given_and_the_body_is_decoded_once(serve: Callable[..., _Server]) -> None:
    def echo(h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        seen = {
            "method": h.command,
            "path": h.path,
            "body": h.rfile.read(length).decode(),
            "custom": h.headers.get("X-Custom"),
            "host": h.headers.get("Host"),
            "acceptEncoding": h.headers.get_all("Accept-Encoding"),
        }
        _reply(h, gzip.compress(json.dumps(seen).encode()), Content_Encoding="gzip", Content_Type="application/json")

    server = serve(echo)
    with sync_http_client(False, timeout=5) as client:
        r = client.post(f"{server.url}/echo?a=1&b=x%20y", content=b"hello", headers={"X-Custom": "yes"})
    assert r.status_code == 200
    seen = r.json()
    assert seen["method"] == "POST" and seen["path"] == "/echo?a=1&b=x%20y" and seen["body"] == "hello"
    assert seen["custom"] == "yes" and seen["host"] == server.url.removeprefix("http://")
    assert len(seen["acceptEncoding"]) == 1 and "gzip" in seen["acceptEncoding"][0]  # httpx's, not http.client's too


def test_requests_share_one_kept_alive_connection(serve: Callable[..., _Server]) -> None:
    server = serve(lambda h: _reply(h, b"ok"))
    with sync_http_client(False, timeout=5) as client:
        assert [client.get(server.url).text for _ in range(3)] == ["ok"] * 3
    assert len(server.ports) == 3 and len(set(server.ports)) == 1


def test_a_connection_the_server_closed_is_not_used_again(serve: Callable[..., _Server]) -> None:
    closed = threading.Event()

    def once_then_close(h: BaseHTTPRequestHandler) -> None:
        _reply(h, b"ok")  # no "Connection: close": the client learns it when the socket closes, as after an idle time
        h.close_connection = True
        closed.set()

    server = serve(once_then_close)
    with sync_http_client(False, timeout=5) as client:
        assert client.get(server.url).text == "ok"
        assert closed.wait(5)
        assert client.get(server.url).text == "ok"
    assert len(set(server.ports)) == 2


def test_a_streamed_body_arrives_as_it_is_sent(serve: Callable[..., _Server]) -> None:
    # A watch: the second line is sent only once the client has read the first.
    first_read = threading.Event()

    def watch(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        for n in range(2):
            line = f'{{"n": {n}}}\n'.encode()
            h.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            h.wfile.flush()
            if n == 0:
                first_read.wait(10)
        h.wfile.write(b"0\r\n\r\n")

    server = serve(watch)
    lines = []
    with sync_http_client(False, timeout=5) as client, client.stream("GET", server.url) as r:
        for line in r.iter_lines():
            lines.append(json.loads(line)["n"])
            first_read.set()
    assert lines == [0, 1]


def test_a_redirect_is_returned_not_followed(serve: Callable[..., _Server]) -> None:
    server = serve(lambda h: _reply(h, b"", 302, Location="/elsewhere"))
    with sync_http_client(False, timeout=5) as client:
        r = client.get(f"{server.url}/here")
    assert r.status_code == 302 and r.headers["location"] == "/elsewhere" and len(server.ports) == 1


def test_failures_are_httpx_transport_errors(serve: Callable[..., _Server], tmp_path: Path) -> None:
    port = free_port()
    with sync_http_client(False, timeout=5) as client, pytest.raises(httpx2.ConnectError) as refused:
        client.get(f"http://127.0.0.1:{port}/")
    assert isinstance(refused.value.__cause__, ConnectionRefusedError)

    cert, key = self_signed_pair("127.0.0.1", ["127.0.0.1"], [])
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    release = threading.Event()

    def slow(h: BaseHTTPRequestHandler) -> None:
        release.wait(10)
        _reply(h, b"late")

    server = serve(slow, tls)
    try:
        # A CA that did not sign the server's certificate: the handshake fails, as a connect error.
        with (
            sync_http_client(ssl.create_default_context(), timeout=5) as client,
            pytest.raises(httpx2.ConnectError) as e,
        ):
            client.get(server.url)
        unverified = e
        assert isinstance(unverified.value.__cause__, ssl.SSLCertVerificationError)
        assert "CERTIFICATE_VERIFY_FAILED" in str(unverified.value)
        # The certificate's own CA: verified; an answer later than the read timeout is a ReadTimeout.
        ca = cert[cert.index(b"-----END CERTIFICATE-----") + len(b"-----END CERTIFICATE-----\n") :]
        verified = ssl.create_default_context(cadata=ca.decode())
        with sync_http_client(verified, timeout=0.3) as client, pytest.raises(httpx2.ReadTimeout):
            client.get(server.url)
    finally:
        release.set()


def test_a_latin_1_header_and_a_streamed_request_body(serve: Callable[..., _Server]) -> None:
    def echo(h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length)
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def latin(h: BaseHTTPRequestHandler) -> None:  # a header byte above 0x7f, written by hand
        h.wfile.write(b"HTTP/1.1 200 OK\r\nX-Name: caf\xe9\r\nContent-Length: 2\r\n\r\nok")

    server = serve(echo)
    with sync_http_client(False, timeout=5) as client:
        # content from a generator: httpx would send it chunked; it goes with its length instead
        r = client.post(server.url, content=iter([b"par", b"ts"]))
        assert r.status_code == 200 and r.content == b"parts"
        assert client.get(server.url).status_code == 200  # and the connection is still usable
    other = serve(latin)
    with sync_http_client(False, timeout=5) as client:
        r = client.get(other.url)
    assert r.status_code == 200 and r.text == "ok" and r.headers.raw[0] == (b"X-Name", b"caf\xe9")
