"""A real HTTPS webhook server on 127.0.0.1 for tests and benchmarks: admission (AdmissionReview) and conversion
(ConversionReview) webhooks whose answers a test writes as plain functions.

    with WebhookServer(cert, key, {"/deny": deny}) as hook:   # deny(review) -> the response part of the review
        hook.url("/deny")

Each handler receives the parsed review and returns its `response` (the server copies the request's uid and the
review's apiVersion/kind around it). Served by a thread pool, so a slow handler does not hold up the others.
The module uses only the standard library, so a test can also run it inside a Pod (mounted from a ConfigMap).
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["WebhookServer", "json_patch"]

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def json_patch(ops: list[dict[str, Any]]) -> dict[str, str]:
    """The `patch`/`patchType` fields of a mutating response."""
    import base64

    return {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(ops).encode()).decode()}


class WebhookServer:
    def __init__(
        self, cert: Path | str, key: Path | str, handlers: dict[str, Handler], host: str = "127.0.0.1", port: int = 0
    ):
        self.handlers = handlers
        self.requests: list[dict[str, Any]] = []
        self._connections: set[socket.socket] = set()
        outer = self

        class _Req(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real webhook servers (Go's net/http) answer

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle delay on keep-alive
                outer._connections.add(self.request)

            def finish(self) -> None:
                outer._connections.discard(self.request)
                super().finish()

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                outer.requests.append(body)
                handler = outer.handlers.get(self.path.split("?")[0])
                if handler is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                response = dict(handler(body))
                request = body.get("request") or {}
                response.setdefault("uid", request.get("uid", ""))
                out = json.dumps({"apiVersion": body.get("apiVersion"), "kind": body.get("kind"), "response": response})
                data = out.encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the caller gave up (a timeout test)

        self._server = ThreadingHTTPServer((host, port), _Req)
        self._server.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
        self.host, self.port = host, self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="webhook-server", daemon=True)
        self._stopped = False

    def url(self, path: str) -> str:
        return f"https://{self.host}:{self.port}{path}"

    def __enter__(self) -> WebhookServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving (idempotent): connections to the port are refused from now on."""
        if self._stopped:
            return
        self._stopped = True
        self._server.shutdown()
        self._server.server_close()
        for conn in list(self._connections):  # kept-alive connections end too: the webhook is gone
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)
