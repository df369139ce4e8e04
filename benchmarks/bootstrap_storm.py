"""Benchmark: N simulated kubelets join at once through the kubelet's own TLS-bootstrap code path.

Starts our kube-apiserver (generated PKI, SQLite) and our kube-controller-manager (kubeadm's flags: csrapproving +
csrsigning), creates a bootstrap token with kubeadm's RBAC, then runs N kubelets in this process. Each one uses the
same code as `pykubeadm component kubelet`: a `CertificateManager` with an empty cert store and the bootstrap token
(fresh ECDSA P-256 key, CSR `csr-xxxxx` for kubernetes.io/kube-apiserver-client-kubelet, wait by watch, store
`kubelet-client-<ts>.pem` + `-current.pem`), then a `NodeAgent` registering the Node with the new certificate. Reports
the time until every kubelet holds a signed certificate and has registered its Node, per-kubelet latencies, and CPU
seconds / peak RSS of the apiserver and controller-manager. Optional second phase: M nodes renew their Leases every
10 s for S seconds (node certificates signed locally), reporting renewal latency p50/p99.

Targets on a 2-core machine: N = 1000 in ≤ 30 s; 5000 Lease renewers with p99 ≤ 1 s.

    .venv/bin/python benchmarks/bootstrap_storm.py [--nodes 1000] [--lease-nodes 0 --lease-seconds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import os
import resource
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from tests.integration.controllers.harness import (
    ControllerManager,
    grant_controller_roles_to_kcm_user,
    kubeadm_rbac,
    token_request_available,
)
from tests.integration.kubelet.controlplane import setup_bootstrap

from pykubeadm.kubelet.api import ClientConfig, KubeClient
from pykubeadm.kubelet.certmanager import CertificateManager
from pykubeadm.kubelet.certstore import CertPair, PairStore
from pykubeadm.kubelet.csr import client_template, key_pem
from pykubeadm.kubelet.kubelet import pair_client_config
from pykubeadm.kubelet.node import NodeAgent, initial_node
from pykubeadm.testing.apiserver import running_apiserver

TOKEN_ID, TOKEN_SECRET = "storm0", "0123456789abcdef"


class _Events(logging.Handler):
    """Counts the kubelet code's own log lines: CSRs created (with times) and retries."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.created: list[float] = []
        self.retries = 0
        self.samples: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if msg.startswith("created certificate signing request"):
            self.created.append(time.monotonic())
        elif "retry" in msg or record.levelno >= logging.WARNING:
            self.retries += 1
            if len(self.samples) < 3:
                self.samples.append(msg[:300])


def proc_stats(pid: int) -> dict[str, float]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = hwm = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
        elif line.startswith("VmHWM:"):
            hwm = int(line.split()[1])
    return {"cpu_seconds": cpu, "rss_mib": rss / 1024, "peak_rss_mib": hwm / 1024}


def pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(pct(values, 50), 3),
        "p90": round(pct(values, 90), 3),
        "p99": round(pct(values, 99), 3),
        "max": round(max(values), 3) if values else 0.0,
        "mean": round(statistics.fmean(values), 3) if values else 0.0,
    }


async def one_kubelet(
    i: int, base: ClientConfig, boot: ClientConfig, root: Path, t0: float, results: dict[str, list[float]]
) -> None:
    """One simulated kubelet: the certificate manager's first rotation (the bootstrap), then Node registration."""
    name = f"storm-{i:05d}"
    store = PairStore(root / name / "pki", "kubelet-client")

    def authenticated(pair: CertPair | None) -> ClientConfig:
        return pair_client_config(base, pair) if pair is not None else boot

    manager = CertificateManager(store, lambda: client_template(name), authenticated=authenticated, name=name)
    pair = await manager.rotate_with_backoff()
    results["cert"].append(time.monotonic() - t0)
    client = KubeClient(pair_client_config(base, pair))
    try:
        node = initial_node(name, hostname=name, node_ip=None, version="v1.33.0", root=root)
        agent = NodeAgent(client, node)
        await agent.register()
        results["node"].append(time.monotonic() - t0)
    finally:
        await client.close()


def sign_node_cert(ca_cert: x509.Certificate, ca_key: Any, name: str) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{name}"),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem(key)


class LeanLease:
    """A minimal Lease renewer: one persistent TLS connection, raw HTTP/1.1, the kubelet's GET/create/PUT sequence.

    The load generator shares the machine's 2 cores with the apiserver, so it must cost far less per request than
    the apiserver; httpx costs ~2.5 ms of client CPU per request, this ~0.2 ms.
    """

    def __init__(self, name: str, host: str, port: int, ctx: ssl.SSLContext):
        self.name, self.host, self.port, self.ctx = name, host, port, ctx
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.lease: dict[str, Any] | None = None

    async def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port, ssl=self.ctx)
        assert self.reader is not None
        data = json.dumps(body).encode() if body is not None else b""
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAccept: application/json\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        self.writer.write(head.encode() + data)
        status_line = await self.reader.readline()
        if not status_line:
            self.writer = None
            raise ConnectionError("connection closed")
        status = int(status_line.split()[1])
        length, chunked = 0, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode().partition(":")
            if k.lower() == "content-length":
                length = int(v)
            elif k.lower() == "transfer-encoding" and "chunked" in v.lower():
                chunked = True
        if chunked:
            payload = b""
            while True:
                size = int((await self.reader.readline()).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                payload += chunk[:-2]
        else:
            payload = await self.reader.readexactly(length)
        return status, json.loads(payload) if payload else None

    def _spec(self, base: dict[str, Any] | None) -> dict[str, Any]:
        lease = dict(
            base
            or {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": "kube-node-lease"},
            }
        )
        lease["spec"] = {
            "holderIdentity": self.name,
            "leaseDurationSeconds": 40,
            "renewTime": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        return lease

    async def renew(self) -> None:
        """Optimistic PUT of the last Lease; on failure GET, or create it when missing (the kubelet's order)."""
        if self.lease is not None:
            status, body = await self._request("PUT", self.path, self._spec(self.lease))
            if status == 200:
                self.lease = body
                return
        status, body = await self._request("GET", self.path)
        if status == 404:
            status, body = await self._request(
                "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", self._spec(None)
            )
        elif status == 200:
            status, body = await self._request("PUT", self.path, self._spec(body))
        if status not in (200, 201):
            raise RuntimeError(f"lease {self.name}: HTTP {status}: {body}")
        self.lease = body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def lease_phase(api: Any, count: int, seconds: float, client_kind: str) -> dict[str, Any]:
    """`count` nodes renew their Lease every 10 s (staggered) for `seconds`; latency of every renewal.

    Node certificates are signed locally (the phase measures Lease traffic, not bootstrap). `client_kind` "lean"
    uses LeanLease, "kubelet" the kubelet's own NodeAgent over its httpx client.
    """
    ca_pem = api.pki.ca_cert.read_bytes()
    ca_cert = x509.load_pem_x509_certificate(ca_pem)
    ca_key = serialization.load_pem_private_key(api.pki.ca_key.read_bytes(), None)
    latencies: list[float] = []
    errors = 0
    renewers: list[Any] = []
    closers: list[Any] = []
    for i in range(count):
        name = f"lease-{i:05d}"
        cert, key = sign_node_cert(ca_cert, ca_key, name)
        config = ClientConfig(server=api.url, ca_pem=ca_pem, cert_pem=cert, key_pem=key)
        if client_kind == "kubelet":
            client = KubeClient(config, timeout=30)
            agent = NodeAgent(client, {"metadata": {"name": name}, "status": {}})
            renewers.append(agent.renew_lease_once)
            closers.append(client.close)
        else:
            lean = LeanLease(name, api.host, api.port, config.ssl_context())
            renewers.append(lean.renew)
            closers.append(lean.close)
    # warm-up (not measured): every node connects (TLS handshake) and creates its Lease, 200 at a time
    t_warm = time.monotonic()
    sem = asyncio.Semaphore(200)

    async def create(renew: Any) -> None:
        nonlocal errors
        async with sem:
            try:
                await renew()
            except Exception:
                errors += 1

    await asyncio.gather(*(create(r) for r in renewers))
    warmup = time.monotonic() - t_warm
    api_before, me_before = proc_stats(api.proc.pid)["cpu_seconds"], time.process_time()
    stop_at = time.monotonic() + seconds

    async def renewer(renew: Any, offset: float) -> None:
        nonlocal errors
        await asyncio.sleep(offset)
        while time.monotonic() < stop_at:
            t = time.monotonic()
            try:
                await renew()
                latencies.append(time.monotonic() - t)
            except Exception:
                errors += 1
            await asyncio.sleep(max(0.0, 10.0 - (time.monotonic() - t)))

    try:
        await asyncio.gather(*(renewer(r, 10.0 * i / max(1, count)) for i, r in enumerate(renewers)))
    finally:
        for close in closers:
            res = close()
            if asyncio.iscoroutine(res):
                await res
    api_cpu = proc_stats(api.proc.pid)["cpu_seconds"] - api_before
    me_cpu = time.process_time() - me_before
    return {
        "lease_nodes": count,
        "client": client_kind,
        "seconds": seconds,
        "warmup_create_s": round(warmup, 2),
        "renewals": len(latencies),
        "renewals_per_s": round(len(latencies) / seconds, 1),
        "apiserver_cpu_seconds": round(api_cpu, 2),
        "benchmark_process_cpu_seconds": round(me_cpu, 2),
        "errors": errors,
        "latency_s": summary(latencies),
        "target_p99_s": 1.0,
        "met_target": bool(latencies) and pct(latencies, 99) <= 1.0 and errors == 0,
    }


async def storm(api: Any, kcm_pid: int, nodes: int, root: Path) -> dict[str, Any]:
    admin = KubeClient(
        ClientConfig(
            server=api.url,
            ca_pem=api.pki.ca_cert.read_bytes(),
            cert_pem=api.pki.admin_cert.read_bytes(),
            key_pem=api.pki.admin_key.read_bytes(),
        )
    )
    await setup_bootstrap(admin, TOKEN_ID, TOKEN_SECRET, dt.timedelta(hours=2))
    await admin.close()
    base = ClientConfig(server=api.url, ca_pem=api.pki.ca_cert.read_bytes())
    boot = ClientConfig(server=api.url, ca_pem=base.ca_pem, token=f"{TOKEN_ID}.{TOKEN_SECRET}")
    results: dict[str, list[float]] = {"cert": [], "node": []}
    events = _Events()
    logging.getLogger("pykubeadm.kubelet").addHandler(events)
    logging.getLogger("pykubeadm.kubelet").setLevel(logging.INFO)
    before = {"apiserver": proc_stats(api.proc.pid), "controller_manager": proc_stats(kcm_pid)}
    t0 = time.monotonic()
    outcomes = await asyncio.gather(
        *(one_kubelet(i, base, boot, root, t0, results) for i in range(nodes)), return_exceptions=True
    )
    elapsed = time.monotonic() - t0
    after = {"apiserver": proc_stats(api.proc.pid), "controller_manager": proc_stats(kcm_pid)}
    failures = [repr(o) for o in outcomes if isinstance(o, BaseException)]
    return {
        "nodes": nodes,
        "all_joined_s": round(elapsed, 3),
        "with_certificate": len(results["cert"]),
        "registered": len(results["node"]),
        "failures": len(failures),
        "first_failures": failures[:3],
        "retries_or_warnings": events.retries,
        "retry_samples": events.samples,
        "time_to_csr_created_s": summary([t - t0 for t in events.created]),
        "time_to_certificate_s": summary(results["cert"]),
        "time_to_node_s": summary(results["node"]),
        "target_s": 30.0,
        "met_target": not failures and elapsed <= 30.0,
        "processes": {
            k: {
                "cpu_seconds": round(after[k]["cpu_seconds"] - before[k]["cpu_seconds"], 2),
                "rss_mib": round(after[k]["rss_mib"], 1),
                "peak_rss_mib": round(after[k]["peak_rss_mib"], 1),
            }
            for k in after
        },
        "benchmark_process_cpu_seconds": round(time.process_time(), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--lease-nodes", type=int, default=0)
    ap.add_argument("--lease-seconds", type=float, default=30.0)
    ap.add_argument(
        "--lease-client",
        choices=("lean", "kubelet"),
        default="lean",
        help="lean: raw HTTP/1.1 renewers (cheap load generator); kubelet: the kubelet's NodeAgent",
    )
    ap.add_argument("--storage", default="sqlite", help="sqlite (default), memory, or an etcd URL")
    args = ap.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # thousands of connections, inherited by the servers
    with tempfile.TemporaryDirectory(prefix="bootstrap-storm-") as tmp:
        base = Path(tmp)
        out: dict[str, Any] = {"benchmark": "bootstrap_storm", "cpus": os.cpu_count()}
        with running_apiserver(base / "api", storage=args.storage, audit_log=False) as api:
            kubeadm_rbac(api)
            if not token_request_available(api):
                grant_controller_roles_to_kcm_user(api)
            (base / "kcm").mkdir()
            kcm = ControllerManager(api, base / "kcm").start(timeout=60)
            try:
                assert kcm.proc is not None
                out["storm"] = asyncio.run(storm(api, kcm.proc.pid, args.nodes, base / "nodes"))
                if args.lease_nodes:
                    out["leases"] = asyncio.run(
                        lease_phase(api, args.lease_nodes, args.lease_seconds, args.lease_client)
                    )
            finally:
                kcm.stop()
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
