"""wait-control-plane: the URL of each component check comes from its static Pod manifest's probe; a closed port fails
the check with Go's "connection refused" text, an open one is checked with a request."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from pykubeadm.errors import KubeadmError
from pykubeadm.phases.waitcontrolplane import ComponentCheck, _refused, component_checks, wait_healthy
from pykubeadm.testing.etcd import free_port


def _manifest(tmp_path: Path, name: str, http_get: dict) -> Path:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"containers": [{"name": name, "image": "x", "startupProbe": {"httpGet": http_get}}]},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(pod))
    return path


def test_urls_follow_the_probes(tmp_path: Path) -> None:
    manifests = {
        "kube-apiserver": _manifest(tmp_path, "kube-apiserver", {"host": "fd00::1", "port": 6443, "scheme": "HTTPS"}),
        "kube-controller-manager": _manifest(tmp_path, "kube-controller-manager", {"port": 10257}),
        "kube-scheduler": _manifest(tmp_path, "kube-scheduler", {"host": "127.0.0.1", "port": 10259}),
    }
    urls = {c.name: c.url for c in component_checks(manifests)}
    assert urls == {
        "kube-apiserver": "https://[fd00::1]:6443/livez",
        "kube-controller-manager": "https://127.0.0.1:10257/healthz",
        "kube-scheduler": "https://127.0.0.1:10259/livez",
    }


def test_a_probe_without_a_port_is_an_error_not_a_url_with_none(tmp_path: Path) -> None:
    manifests = {"kube-scheduler": _manifest(tmp_path, "kube-scheduler", {"host": "127.0.0.1", "path": "/livez"})}
    with pytest.raises(KubeadmError, match=r"kube-scheduler\.yaml.*no httpGet port"):
        component_checks(manifests)


def test_a_check_of_a_closed_port_fails_with_gos_connection_refused_text() -> None:
    port = free_port()
    url = f"https://127.0.0.1:{port}/livez"
    with pytest.raises(KubeadmError) as err:
        wait_healthy([ComponentCheck("kube-apiserver", url)], 0.2, lambda _line: None)
    assert str(err.value) == (
        f'kube-apiserver check failed at {url}: Get "{url}": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )


def test_an_open_port_is_checked_with_a_request() -> None:
    with socket.socket() as srv:  # accepts connections, answers no HTTP: the request's error is reported
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        url = f"http://127.0.0.1:{srv.getsockname()[1]}/healthz"
        assert _refused(url) is None
        with pytest.raises(KubeadmError) as err:
            wait_healthy([ComponentCheck("The kubelet", url)], 0.3, lambda _line: None)
    assert "connection refused" not in str(err.value)
    assert str(err.value).startswith(f'The kubelet check failed at {url}: Get "{url}": ')


def test_a_component_is_polled_over_one_kept_alive_tls_connection(tmp_path: Path) -> None:
    """Until healthy, each poll is a request on the same connection: no new TLS handshake per poll (the component
    pays for each one while it starts)."""
    import ssl
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from pykubeadm.controllers.app.serving import self_signed_pair

    key, cert = tmp_path / "tls.key", tmp_path / "tls.crt"
    cert_pem, key_pem = self_signed_pair("localhost", ["127.0.0.1"], [])
    cert.write_bytes(cert_pem)
    key.write_bytes(key_pem)
    peers: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            peers.append(self.client_address[1])
            healthy = len(peers) >= 3
            body = b"ok" if healthy else b"[-]poststarthook/rbac/bootstrap-roles failed"
            self.send_response(200 if healthy else 500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: object, client_address: object) -> None:
            pass  # the wait's TCP-connect probe closes without a TLS handshake

    server = Server(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    lines: list[str] = []
    try:
        url = f"https://127.0.0.1:{server.server_address[1]}/livez"
        wait_healthy([ComponentCheck("kube-apiserver", url)], 10, lines.append)
    finally:
        server.shutdown()
        server.server_close()
    assert len(lines) == 1 and lines[0].startswith("[control-plane-check] kube-apiserver is healthy after ")
    assert len(peers) == 3
    assert len(set(peers)) == 1  # one connection for the three requests
