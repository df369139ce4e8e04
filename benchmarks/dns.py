"""DNS benchmark (JSON on stdout): answers per second and latency from one client against our built-in CoreDNS
(`pykubeadm component coredns` with kubeadm's Corefile, a real apiserver behind the kubernetes plugin), side by side
with the same queries against dnsmasq, the reference, answering the same names.

    .venv/bin/python benchmarks/dns.py [--seconds 3] [--window 16]

Setup note: dnsmasq comes from Debian's `dnsmasq-base` package (`apt-get install -y dnsmasq-base`); without it the
reference rows are left out. Nothing listens outside 127.0.0.0/8: the upstream both servers forward to is a tiny
dnspython resolver run in this process.

Queries: `cluster` asks a ClusterIP Service's A record (ours: the kubernetes plugin; dnsmasq: a --host-record),
`forwarded` asks a name the upstream knows (after the first query both answer from their caches). The client is one
process with one UDP socket keeping 1, 4 and `--window` queries in flight (1 = strictly one at a time); latency is from
send to reply. Targets (2 cores, client included): ≥ 5,000 answers/s and p99 ≤ 5 ms.
"""

from __future__ import annotations

# ruff: noqa: E402 - the import path is fixed first (see below)
import sys
from pathlib import Path

# This file is named dns.py: keep its directory off the import path so `import dns` is dnspython.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse
import json
import os
import select
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from typing import Any

import dns.message
import dns.rdatatype
from tests.integration.dns.conftest import (
    Upstream,
    _serve_upstream,
    kubeadm_corefile,
    start_dns,
)

from pykubeadm.testing.apiserver import free_port, running_apiserver

CLUSTER_NAME = "web.default.svc.cluster.local."
FORWARDED_NAME = "upstream.test."


def _queries(name: str) -> list[bytes]:
    """Wire queries for every message id (dnspython builds them; the client matches replies by id)."""
    out = []
    for qid in range(65536):
        msg = dns.message.make_query(name, dns.rdatatype.A)
        msg.id = qid
        out.append(msg.to_wire())
    return out


def run_client(host: str, port: int, name: str, seconds: float, window: int) -> dict[str, Any]:
    queries = _queries(name)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect((host, port))
    sock.setblocking(False)
    sent: dict[int, float] = {}
    latencies: list[float] = []
    next_id, errors = 0, 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        while len(sent) < window:
            qid = next_id
            next_id = (next_id + 1) % 65536
            sent[qid] = time.perf_counter()
            sock.send(queries[qid])
        readable, _, _ = select.select([sock], [], [], 1.0)
        if not readable:
            errors += len(sent)  # lost: resend a fresh window
            sent.clear()
            continue
        while True:
            try:
                data = sock.recv(4096)
            except BlockingIOError:
                break
            reply = dns.message.from_wire(data)
            start = sent.pop(reply.id, None)
            if start is not None and reply.answer:
                latencies.append(time.perf_counter() - start)
            elif start is not None:
                errors += 1
    sock.close()
    latencies.sort()

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 3) if latencies else 0.0

    return {
        "answers_per_s": round(len(latencies) / seconds),
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 3) if latencies else 0.0,
        "errors": errors,
    }


def start_dnsmasq(directory: Path, upstream: Upstream, cluster_ip: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    (directory / "empty.conf").touch()  # no /etc/dnsmasq.conf: only the flags below
    proc = subprocess.Popen(
        [
            shutil.which("dnsmasq") or "dnsmasq",
            "--keep-in-foreground",
            "--no-resolv",
            "--no-hosts",
            "--no-dhcp-interface=",
            "--listen-address=127.0.0.1",
            "--bind-interfaces",
            f"--port={port}",
            f"--server={upstream.host}#{upstream.port}",
            f"--host-record={CLUSTER_NAME.rstrip('.')},{cluster_ip}",
            "--cache-size=10000",
            "--pid-file=",
            "--user=root",
            f"--conf-file={directory / 'empty.conf'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(directory / "dnsmasq.log", "wb"),  # noqa: SIM115 - owned by the process
        start_new_session=True,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            import dns.query

            dns.query.udp(dns.message.make_query(CLUSTER_NAME, "A"), "127.0.0.1", port=port, timeout=0.5)
            return proc, port
        except Exception:
            if proc.poll() is not None:
                raise RuntimeError((directory / "dnsmasq.log").read_text()) from None
    raise RuntimeError("dnsmasq did not answer")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--window", type=int, default=16)
    args = parser.parse_args()
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "note": "shared machine: other work ran at the same time",
            "loadavg_1m_at_start": round(os.getloadavg()[0], 2),
        },
        "seconds": args.seconds,
    }
    with tempfile.TemporaryDirectory() as tmp, running_apiserver(Path(tmp) / "api") as api:
        from kubernetes import client as k8s

        core = k8s.CoreV1Api(api.python_client())
        svc = core.create_namespaced_service(
            "default",
            k8s.V1Service(
                metadata=k8s.V1ObjectMeta(name="web"), spec=k8s.V1ServiceSpec(ports=[k8s.V1ServicePort(port=80)])
            ),
        )
        upstream = Upstream("127.0.0.1", free_port())
        servers = _serve_upstream(upstream)
        directory = Path(tmp)
        extra = f"       kubeconfig {api.kubeconfig()}\n"
        ours = start_dns(
            directory,
            lambda port, http: kubeadm_corefile(port, http, f"{upstream.host}:{upstream.port}", extra, reload="30s"),
        )
        masq = None
        try:
            targets = {"pykubeadm-coredns": (ours.host, ours.port)}
            if shutil.which("dnsmasq"):
                masq, masq_port = start_dnsmasq(directory, upstream, svc.spec.cluster_ip)
                targets["dnsmasq"] = ("127.0.0.1", masq_port)
            else:
                results["dnsmasq"] = "not installed (apt-get install -y dnsmasq-base)"
            for label, (host, port) in targets.items():
                for kind, name in (("cluster", CLUSTER_NAME), ("forwarded", FORWARDED_NAME)):
                    run_client(host, port, name, 0.5, 1)  # warm-up (fills the caches)
                    for window in sorted({1, 4, args.window}):
                        key = f"{kind}_window{window}"
                        results.setdefault(label, {})[key] = run_client(host, port, name, args.seconds, window)
        finally:
            ours.stop()
            if masq is not None:
                masq.terminate()
                masq.wait(10)
            for server in servers:
                server.shutdown()
                server.server_close()
    results["machine"]["loadavg_1m_at_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
