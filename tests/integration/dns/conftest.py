"""Fixtures for the DNS server's integration tests: a real apiserver, an upstream resolver we run, our server.

Everything listens on loopback addresses; every process started here is stopped by its process group.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import dns.exception
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset
import pytest

from pykubeadm.phases.addons.dns import corefile
from pykubeadm.testing.apiserver import free_port, running_apiserver

#: What the upstream resolver knows: name → A record; `big.upstream.test.` TXT does not fit in 512 bytes.
UPSTREAM_A = {"upstream.test.": "192.0.2.1", "www.example.test.": "192.0.2.2"}
BIG_TXT = [f'"record {i:02d} {"x" * 40}"' for i in range(20)]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory):
    with running_apiserver(tmp_path_factory.mktemp("apiserver")) as server:
        yield server


@dataclass
class Upstream:
    """A tiny dnspython resolver on UDP and TCP; `queries` records (name, type, proto) of every query it got."""

    host: str
    port: int
    queries: list[tuple[str, str, str]] = field(default_factory=list)

    def reply(self, wire: bytes, proto: str) -> bytes:
        query = dns.message.from_wire(wire)
        q = query.question[0]
        name = q.name.to_text().lower()
        self.queries.append((name, dns.rdatatype.to_text(q.rdtype), proto))
        reply = dns.message.make_response(query)
        reply.flags |= dns.flags.RA
        if name in UPSTREAM_A and q.rdtype == dns.rdatatype.A:
            reply.answer.append(dns.rrset.from_text(q.name, 300, "IN", "A", UPSTREAM_A[name]))
        elif name == "big.upstream.test." and q.rdtype == dns.rdatatype.TXT:
            reply.answer.append(dns.rrset.from_text_list(q.name, 300, "IN", "TXT", BIG_TXT))
        else:
            reply.set_rcode(dns.rcode.NXDOMAIN)
            reply.authority.append(
                dns.rrset.from_text("test.", 60, "IN", "SOA", "ns.test. admin.test. 1 7200 1800 86400 60")
            )
        try:
            return reply.to_wire(max_size=512 if proto == "udp" else 65535)
        except dns.exception.TooBig:
            short = dns.message.make_response(query)
            short.flags |= dns.flags.TC
            return short.to_wire()


def _serve_upstream(upstream: Upstream) -> tuple[socketserver.BaseServer, socketserver.BaseServer]:
    class Udp(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            data, sock = self.request
            sock.sendto(upstream.reply(data, "udp"), self.client_address)

    class Tcp(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            while (header := self.rfile.read(2)) and len(header) == 2:
                wire = upstream.reply(self.rfile.read(int.from_bytes(header, "big")), "tcp")
                self.wfile.write(len(wire).to_bytes(2, "big") + wire)

    class UdpServer(socketserver.ThreadingUDPServer):
        allow_reuse_address = True
        daemon_threads = True

    class TcpServer(socketserver.ThreadingTCPServer):
        allow_reuse_address = True
        daemon_threads = True

    udp = UdpServer((upstream.host, upstream.port), Udp)
    tcp = TcpServer((upstream.host, upstream.port), Tcp)
    for server in (udp, tcp):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    return udp, tcp


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    """On port 53 of a random 127.53.x.y address when we may bind it (so a resolv.conf can name it), else on a
    free port of 127.0.0.1."""
    servers = None
    for _ in range(20):
        if os.geteuid() == 0:
            up = Upstream(f"127.53.{random.randint(1, 254)}.{random.randint(1, 254)}", 53)
        else:
            up = Upstream("127.0.0.1", free_port())
        try:
            servers = _serve_upstream(up)
            break
        except OSError:
            continue
    assert servers is not None, "no loopback address/port free for the upstream resolver"
    try:
        yield up
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


@dataclass
class DnsProcess:
    proc: subprocess.Popen[bytes]
    host: str
    port: int
    http: dict[str, int]
    corefile: Path
    log: Path

    def get(self, what: str) -> tuple[int, str]:
        url = f"http://{self.host}:{self.http[what]}/{what}"
        try:
            with urllib.request.urlopen(url, timeout=5) as res:
                return res.status, res.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"coredns exited {self.proc.returncode}:\n{self.output()}")
            with contextlib.suppress(OSError):
                if self.get("ready")[0] == 200:
                    return
            time.sleep(0.1)
        raise AssertionError(f"coredns not ready after {timeout}s:\n{self.output()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


def kubeadm_corefile(port: int, http: dict[str, int], forward: str, kube_extra: str = "", reload: str = "2s 1s") -> str:
    """kubeadm's Corefile with test ports, our upstream and extra kubernetes properties."""
    text = corefile("cluster.local")
    text = text.replace(".:53 {", f".:{port} {{")
    text = text.replace("    health {", f"    health :{http['health']} {{")
    text = text.replace("    ready\n", f"    ready :{http['ready']}\n")
    text = text.replace("prometheus :9153", f"prometheus :{http['metrics']}")
    text = text.replace("forward . /etc/resolv.conf", f"forward . {forward}")
    text = text.replace("    reload\n", f"    reload {reload}\n")
    text = text.replace("       pods insecure\n", f"       pods insecure\n{kube_extra}")
    text = text.replace("lameduck 5s", "lameduck 1s")  # stopping a test server waits for it
    return text


def start_dns(
    directory: Path,
    text_for: object,
    env: dict[str, str] | None = None,
    host: str = "127.0.0.1",
    write: object = None,
    same_as: DnsProcess | None = None,
) -> DnsProcess:
    """Write the Corefile `text_for(port, http)` (with `write(text) -> path` if given, else to directory/Corefile)
    and start `pykubeadm component coredns -conf PATH`."""
    if same_as is not None:  # another replica on the same Pod address and ports
        port, http = same_as.port, dict(same_as.http)
    else:
        port = free_udp_tcp_port(host)
        http = {"health": free_port(host), "ready": free_port(host), "metrics": free_port(host)}
    text = text_for(port, http)  # type: ignore[operator]
    if write is not None:
        path = write(text)  # type: ignore[operator]
    else:
        path = directory / "Corefile"
        path.write_text(text)
    log = directory / ("coredns.log" if same_as is None else "coredns-replica.log")
    proc_env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    proc_env.update({"PYKUBEADM_POD_IP": host, "PYKUBEADM_COMPONENT_VERSION": "v1.12.0"}, **(env or {}))
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pykubeadm", "component", "coredns", "-conf", str(path)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=proc_env,
            start_new_session=True,
            cwd=directory,
        )
    dns_proc = DnsProcess(
        proc, host, port, {"health": http["health"], "ready": http["ready"], "metrics": http["metrics"]}, path, log
    )
    try:
        dns_proc.wait_ready()
    except BaseException:
        dns_proc.stop()
        raise
    return dns_proc


def forward_target(upstream: Upstream, directory: Path) -> str:
    """What kubeadm's `forward . /etc/resolv.conf` names: a resolv.conf listing our upstream (port 53), or the
    upstream's address:port when it could not take port 53."""
    if upstream.port != 53:
        return f"{upstream.host}:{upstream.port}"
    resolv = directory / "resolv.conf"
    resolv.write_text(f"search example.test\nnameserver {upstream.host}\noptions ndots:5\n")
    return str(resolv)


def free_udp_tcp_port(host: str) -> int:
    for _ in range(50):
        port = free_port(host)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        return port
    raise AssertionError("no free port")
