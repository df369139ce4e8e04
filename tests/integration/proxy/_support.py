"""A real apiserver with a loopback service range, Nodes on 127.0.10.x, HTTP/UDP backends, kube-proxy processes."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import random
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import Node, NodeStatus

from pykubeadm.api.componentconfigs import default_kube_proxy_config
from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer, free_port, running_apiserver

NODES = {"kp-node-a": "127.0.10.201", "kp-node-b": "127.0.10.202"}


def wait_until(cond: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = cond()
            if last:
                return last
        except Exception as err:
            last = err
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}: {last!r}")


@pytest.fixture(scope="module")
def service_range() -> str:
    """A /16 of 127.0.0.0/8 of this module's own (never 127.0.x), so parallel runs do not share ClusterIPs: above the
    labs' Service networks (127.96-144.0.0/16 for prefixes 127.0.10-58., `lab.nodes.service_subnet`), which run beside
    this module under xdist."""
    return f"127.{random.randint(200, 250)}.0.0/16"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, service_range: str) -> Iterator[ApiServer]:
    with running_apiserver(
        tmp_path_factory.mktemp("apiserver"), extra_flags=[f"--service-cluster-ip-range={service_range}"]
    ) as server:
        yield server


@pytest.fixture(scope="module")
def admin(api: ApiServer) -> Client:
    return sync_client(api.kubeconfig())


@pytest.fixture(scope="module")
def nodes(admin: Client) -> dict[str, str]:
    for name, ip in NODES.items():
        node = admin.create(Node.from_dict({"metadata": {"name": name}}))
        body = node.to_dict()
        body["status"] = {"addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]}
        admin.replace(NodeStatus.from_dict(body), name)
    return dict(NODES)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = self.server.name.encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


class Backend:
    """An HTTP server on a loopback address answering its name, and a UDP echo server on the same port."""

    def __init__(self, name: str, ip: str, port: int):
        self.name, self.ip = name, ip
        self.http = _Server((ip, port), _Handler)
        self.http.name = name  # type: ignore[attr-defined]
        self.port = self.http.server_address[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((ip, self.port))
        self._threads = [
            threading.Thread(target=self.http.serve_forever, daemon=True),
            threading.Thread(target=self._echo, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _echo(self) -> None:
        while True:
            try:
                data, addr = self.udp.recvfrom(2048)
            except OSError:
                return
            self.udp.sendto(self.name.encode() + b":" + data, addr)

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.udp.close()


@pytest.fixture(scope="module")
def backends() -> Iterator[list[Backend]]:
    port = free_port("127.0.20.1")  # one port on both addresses: an EndpointSlice port is shared by its endpoints
    made = [Backend(f"backend-{i}", f"127.0.20.{i}", port) for i in (1, 2)]
    try:
        yield made
    finally:
        for b in made:
            b.close()


class KubeProxy:
    """`pykubeadm component kube-proxy` for one node, configured through a KubeProxyConfiguration file."""

    def __init__(self, directory: Path, api: ApiServer, node: str, ip: str, **config: Any):
        self.dir, self.node, self.ip = directory, node, ip
        directory.mkdir(parents=True, exist_ok=True)
        kubeconfig = api.kubeconfig_for("system:kube-proxy")
        self.healthz_port, self.metrics_port = free_port(ip), free_port(ip)
        doc = default_kube_proxy_config(user=config)
        doc["clientConnection"]["kubeconfig"] = str(kubeconfig)
        doc["healthzBindAddress"] = f"0.0.0.0:{self.healthz_port}"  # unspecified: served on the node's address
        doc["metricsBindAddress"] = f"{ip}:{self.metrics_port}"
        self.config = directory / "config.conf"
        self.config.write_text(yaml.safe_dump(doc))
        self.log_path = directory / "kube-proxy.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def argv(self, *extra: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "pykubeadm",
            "component",
            "kube-proxy",
            f"--config={self.config}",
            f"--hostname-override={self.node}",
            *extra,
        ]

    def start(self) -> KubeProxy:
        env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv(), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        wait_until(self._healthy, 60, f"kube-proxy {self.node} healthz")
        return self

    def _healthy(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"kube-proxy exited {self.proc.returncode}:\n{self.log_path.read_text()[-3000:]}")
        return self.get("healthz")[0] == 200

    def get(self, path: str) -> tuple[int, str]:
        port = self.metrics_port if path in ("metrics", "proxyMode", "configz") else self.healthz_port
        try:
            with urllib.request.urlopen(f"http://{self.ip}:{port}/{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()
        except OSError:
            return 0, ""

    def healthz(self) -> dict[str, Any]:
        return json.loads(self.get("healthz")[1])

    def stop(self) -> None:
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def log(self) -> str:
        return self.log_path.read_text()


__all__ = ["Backend", "KubeProxy", "admin", "api", "backends", "nodes", "service_range", "wait_until"]
