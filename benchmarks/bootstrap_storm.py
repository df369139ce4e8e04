"""Benchmark: N kubelets join at once, each doing to the apiserver exactly what a kubelet's TLS bootstrap does.

Starts our kube-apiserver (generated PKI, SQLite) and our kube-controller-manager (kubeadm's flags: csrapproving +
csrsigning), creates a bootstrap token with kubeadm's RBAC, then runs N simulated kubelets in this process. Per node:
a fresh ECDSA P-256 key and CSR (kubernetes.io/kube-apiserver-client-kubelet); one TLS connection with the bootstrap
token on which it creates the CSR, lists it by `metadata.name` and watches it by name until approved and signed by the
CA; then one TLS connection authenticated by its new client certificate, on which it registers its Node. Two
handshakes per node, as a real kubelet that reuses its connection (HTTP/2 or keep-alive) does.

`--storm-client lean` (default) does this over raw HTTP/1.1 so the load generator's own CPU stays small (≈ 4 ms per
node, mostly TLS and the key; a real fleet spends it on its own machines); `--storm-client kubelet` runs the kubelet's
own code instead (`CertificateManager` with an empty cert store, `NodeAgent` registration, httpx: ≈ 10 ms per node).
The apiserver's work per join is the same either way. The figures: time until every node holds a certificate and has
registered, per-node latencies, and the CPU seconds and peak RSS of the apiserver, the controller-manager and this
process, each separately: with the client on other machines the storm's wall time is bounded below by the apiserver's
CPU seconds (one core) while the controller-manager uses the other core. Each size in `--nodes` runs against a fresh
control plane in the same run, so the growth of the per-join cost is measured under one machine load; the apiserver's
exec → ready time is measured at each start. Optional second phase (after the last size): M nodes renew their Leases
every 10 s for S seconds (node certificates signed locally), reporting p50/p99, the slowest renewals, this process's
event-loop lag and both processes' garbage-collector pauses (benchmarks/gcpauses.py), so a tail can be placed in the
server or in the load generator.

Targets on a 2-core machine (issue #17): apiserver CPU per join at the largest size ≤ 1.3 × the smallest; apiserver
peak RSS ≤ 1 GiB at 5000 nodes; 1000 nodes ≤ 15 s, 5000 nodes ≤ 90 s; 5000 Lease renewers p99 ≤ 250 ms.

    .venv/bin/python benchmarks/bootstrap_storm.py --nodes 250,1000,5000 [--lease-nodes 5000 --lease-seconds 30]
        [--storm-client lean|kubelet] [--max-inflight 3000,1000] [--profile DIR]
        → one line per size on stderr, JSON on stdout
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
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
from pykubeadm.kubelet.csr import (
    CLIENT_SIGNER,
    CSR_PATH,
    build_csr_object,
    client_template,
    create_csr_pem,
    generate_key,
    key_pem,
    usages_for,
)
from pykubeadm.kubelet.kubelet import pair_client_config
from pykubeadm.kubelet.node import NodeAgent, initial_node
from pykubeadm.testing.apiserver import ApiServer

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gcpauses  # noqa: E402

TOKEN_ID, TOKEN_SECRET = "storm0", "0123456789abcdef"
#: Seconds until every node has joined (issue #17), by storm size.
_STORM_TARGETS = {1000: 15.0, 5000: 90.0}
#: This process's garbage-collector pause log (set in main).
_CLIENT_GC_LOG: Path | None = None


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


class LeanKubelet:
    """A simulated kubelet whose own CPU is small, doing to the server exactly what a kubelet's TLS bootstrap does.

    Per node: a fresh ECDSA P-256 key and CSR; one TLS connection with the bootstrap token (POST the CSR, list it by
    `metadata.name`, watch it by name from the list's resourceVersion until it is approved and signed); then one TLS
    connection authenticated by the new client certificate, on which it registers its Node. That is two handshakes
    per node, as a real kubelet reusing its connections does. Shared: the bootstrap SSL context (a client-side object).
    """

    def __init__(self, host: str, port: int, ca_pem: bytes, token: str, node_template: dict[str, Any]):
        self.host, self.port, self.ca_pem = host, port, ca_pem
        self.boot_ctx = ssl.create_default_context(cadata=ca_pem.decode())
        self.auth = f"Authorization: Bearer {token}\r\n"
        self.node_template = node_template
        self.retries = 0
        self.retry_causes: collections.Counter[str] = collections.Counter()
        self.handshakes = 0

    def _node(self, name: str) -> dict[str, Any]:
        node = json.loads(json.dumps(self.node_template))
        node["metadata"]["name"] = name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        return node

    async def _retrying(self, what: str, call: Any) -> tuple[int, Any]:
        for attempt in range(20):
            try:
                status, body = await call()
            except (OSError, ConnectionError, asyncio.IncompleteReadError):
                status, body = 0, None
            if status and status < 500 and status != 429:
                return status, body
            self.retries += 1
            self.retry_causes[f"{what}: HTTP {status}" if status else f"{what}: connection"] += 1
            await asyncio.sleep(min(0.2 * 2**attempt, 5.0))
        raise RuntimeError(f"{what}: no answer after 20 attempts")

    async def join(self, name: str, t0: float, results: dict[str, list[float]], created: list[float]) -> None:
        key = generate_key()
        csr = build_csr_object(create_csr_pem(key, client_template(name)), CLIENT_SIGNER, usages_for(key, False))
        boot = LeanConn(self.host, self.port, self.boot_ctx, self.auth)
        try:
            status, obj = await self._retrying("create CSR", lambda: boot.request("POST", CSR_PATH, csr))
            if status != 201:
                raise RuntimeError(f"create CSR: HTTP {status}: {obj}")
            created.append(time.monotonic())
            csr_name, uid = obj["metadata"]["name"], obj["metadata"]["uid"]
            selector = f"fieldSelector=metadata.name%3D{csr_name}"
            cert: bytes | None = None
            relists = 0
            while cert is None:  # the kubelet's list + watch by name; a refused or broken watch lists again
                status, lst = await self._retrying("list CSR", lambda: boot.request("GET", f"{CSR_PATH}?{selector}"))
                cert = next((c for c in (_issued(o, uid) for o in lst.get("items") or []) if c), None)
                if cert is not None:
                    break
                rv = lst["metadata"]["resourceVersion"]
                path = (
                    f"{CSR_PATH}?watch=true&allowWatchBookmarks=true&timeoutSeconds=290&{selector}&resourceVersion={rv}"
                )
                try:
                    async for etype, obj in boot.watch(path):
                        if etype in ("ADDED", "MODIFIED"):
                            cert = _issued(obj, uid)
                            if cert:
                                break
                        elif etype == "DELETED":
                            raise RuntimeError(f"csr {csr_name} was deleted")
                        elif etype == "ERROR":
                            break  # e.g. 410 Gone as an event: list again
                except (WatchRefused, OSError, ConnectionError, asyncio.IncompleteReadError) as err:
                    self.retries += 1
                    cause = f"HTTP {err.status}" if isinstance(err, WatchRefused) else type(err).__name__
                    self.retry_causes[f"watch CSR: {cause}"] += 1
                    relists += 1
                    if relists > 50:
                        raise RuntimeError(f"csr {csr_name}: watch kept failing: {err}") from None
                    if not isinstance(err, WatchRefused) or err.status != 410:
                        await asyncio.sleep(min(0.2 * relists, 2.0))
        finally:
            self.handshakes += boot.connects
            boot.close()
        results["cert"].append(time.monotonic() - t0)
        ctx = ssl.create_default_context(cadata=self.ca_pem.decode())
        with tempfile.NamedTemporaryFile(suffix=".pem") as f:
            f.write(cert + b"\n" + key_pem(key))
            f.flush()
            ctx.load_cert_chain(f.name)
        node_conn = LeanConn(self.host, self.port, ctx)
        try:
            status, obj = await self._retrying(
                "register Node", lambda: node_conn.request("POST", "/api/v1/nodes", self._node(name))
            )
            if status != 201:
                raise RuntimeError(f"register Node {name}: HTTP {status}: {obj}")
        finally:
            self.handshakes += node_conn.connects
            node_conn.close()
        results["node"].append(time.monotonic() - t0)


def _issued(obj: dict[str, Any], uid: str) -> bytes | None:
    """The CSR's certificate once it is approved and signed; raises when it is denied or failed or not ours."""
    if obj.get("metadata", {}).get("uid") != uid:
        raise RuntimeError("csr changed UIDs")
    status = obj.get("status") or {}
    types = {c.get("type") for c in status.get("conditions") or []}
    if types & {"Denied", "Failed"}:
        raise RuntimeError(f"csr not issued: {status}")
    if "Approved" in types and status.get("certificate"):
        return base64.b64decode(status["certificate"])
    return None


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


class WatchRefused(Exception):
    """A watch answered with an error status (e.g. 410 Gone: the list's resourceVersion left the watch window)."""

    def __init__(self, status: int, body: str):
        super().__init__(f"HTTP {status}: {body}")
        self.status = status


class LeanConn:
    """One persistent TLS connection speaking raw HTTP/1.1 (keep-alive): the load generator's cheap client.

    The load generator shares the machine's 2 cores with the apiserver, so it must cost far less per request than
    the apiserver; httpx costs ~2.5 ms of client CPU per request, this ~0.2 ms. `headers` go on every request (e.g.
    a bearer token).
    """

    def __init__(self, host: str, port: int, ctx: ssl.SSLContext, headers: str = ""):
        self.host, self.port, self.ctx, self.headers = host, port, ctx, headers
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.connects = 0

    async def _send(self, method: str, path: str, body: dict[str, Any] | None) -> asyncio.StreamReader:
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port, ssl=self.ctx)
            self.connects += 1
        assert self.reader is not None
        data = json.dumps(body).encode() if body is not None else b""
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAccept: application/json\r\n"
            f"{self.headers}Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        self.writer.write(head.encode() + data)
        return self.reader

    async def _head(self, reader: asyncio.StreamReader) -> tuple[int, int, bool]:
        status_line = await reader.readline()
        if not status_line:
            self.writer = None
            raise ConnectionError("connection closed")
        status = int(status_line.split()[1])
        length, chunked = 0, False
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode().partition(":")
            if k.lower() == "content-length":
                length = int(v)
            elif k.lower() == "transfer-encoding" and "chunked" in v.lower():
                chunked = True
        return status, length, chunked

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        reader = await self._send(method, path, body)
        status, length, chunked = await self._head(reader)
        if chunked:
            payload = b""
            while True:
                size = int((await reader.readline()).strip(), 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    break
                payload += chunk[:-2]
        else:
            payload = await reader.readexactly(length)
        try:
            return status, json.loads(payload) if payload else None
        except ValueError:  # e.g. a plain-text error from the HTTP layer
            return status, payload[:200].decode(errors="replace")

    async def watch(self, path: str) -> Any:
        """Yield (type, object) of a watch answer (chunked, one JSON event per line) until the caller stops.

        The connection is not reusable after an abandoned watch: it is closed when the generator ends."""
        reader = await self._send("GET", path, None)
        status, length, chunked = await self._head(reader)
        try:
            if status != 200 or not chunked:
                body = await reader.readexactly(length) if length else b""
                raise WatchRefused(status, body[:200].decode(errors="replace"))
            buf = b""
            while True:
                size = int((await reader.readline()).strip(), 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    return
                buf += chunk[:-2]
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        event = json.loads(line)
                        yield event.get("type", ""), event.get("object") or {}
        finally:
            self.close()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class LeanLease:
    """A minimal Lease renewer over one LeanConn: the kubelet's GET/create/PUT sequence."""

    def __init__(self, name: str, host: str, port: int, ctx: ssl.SSLContext):
        self.name = name
        self.conn = LeanConn(host, port, ctx)
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"
        self.lease: dict[str, Any] | None = None

    async def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        return await self.conn.request(method, path, body)

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
        self.conn.close()


async def loop_lag(stop: asyncio.Event, lags: list[float], period: float = 0.05) -> None:
    """How late this process's event loop wakes a 50 ms sleeper: the client side's own scheduling delay."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        t = loop.time()
        await asyncio.sleep(period)
        lags.append(loop.time() - t - period)


async def lease_phase(
    api: Any, count: int, seconds: float, client_kind: str, api_gc_log: Path | None = None
) -> dict[str, Any]:
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
    window_start = time.time()
    stop_at = time.monotonic() + seconds
    slow: list[tuple[float, float]] = []  # (start within the window, latency) of renewals slower than the target
    lags: list[float] = []
    stop_lag = asyncio.Event()
    lag_task = asyncio.ensure_future(loop_lag(stop_lag, lags))
    t_window = time.monotonic()

    async def renewer(renew: Any, offset: float) -> None:
        nonlocal errors
        await asyncio.sleep(offset)
        while time.monotonic() < stop_at:
            t = time.monotonic()
            try:
                await renew()
                latencies.append(time.monotonic() - t)
                if latencies[-1] > 0.25:
                    slow.append((round(t - t_window, 2), round(latencies[-1], 3)))
            except Exception:
                errors += 1
            await asyncio.sleep(max(0.0, 10.0 - (time.monotonic() - t)))

    try:
        await asyncio.gather(*(renewer(r, 10.0 * i / max(1, count)) for i, r in enumerate(renewers)))
    finally:
        stop_lag.set()
        await lag_task
        for close in closers:
            res = close()
            if asyncio.iscoroutine(res):
                await res
    api_cpu = proc_stats(api.proc.pid)["cpu_seconds"] - api_before
    me_cpu = time.process_time() - me_before
    slow.sort(key=lambda x: -x[1])
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
        "slowest_renewals_start_s_latency_s": slow[:8],
        "slow_renewals": len(slow),
        "client_loop_lag_s": summary(lags),
        "client_gc": gcpauses.summary(_CLIENT_GC_LOG, window_start) if _CLIENT_GC_LOG else None,
        "apiserver_gc": gcpauses.summary(api_gc_log, window_start) if api_gc_log else None,
        "target_p99_s": 0.25,
        "met_target": bool(latencies) and pct(latencies, 99) <= 0.25 and errors == 0,
    }


async def storm(api: Any, kcm_pid: int, nodes: int, root: Path, client_kind: str = "lean") -> dict[str, Any]:
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
    cpu0 = time.process_time()
    t0 = time.monotonic()
    lean: LeanKubelet | None = None
    if client_kind == "lean":
        root.mkdir(parents=True, exist_ok=True)
        template = initial_node("template", hostname="template", node_ip=None, version="v1.33.0", root=root)
        lean = LeanKubelet(api.host, api.port, base.ca_pem or b"", f"{TOKEN_ID}.{TOKEN_SECRET}", template)
        outcomes = await asyncio.gather(
            *(lean.join(f"storm-{i:05d}", t0, results, events.created) for i in range(nodes)), return_exceptions=True
        )
    else:
        outcomes = await asyncio.gather(
            *(one_kubelet(i, base, boot, root, t0, results) for i in range(nodes)), return_exceptions=True
        )
    elapsed = time.monotonic() - t0
    after = {"apiserver": proc_stats(api.proc.pid), "controller_manager": proc_stats(kcm_pid)}
    logging.getLogger("pykubeadm.kubelet").removeHandler(events)  # the next size counts its own
    failures = [repr(o) for o in outcomes if isinstance(o, BaseException)]
    return {
        "nodes": nodes,
        "all_joined_s": round(elapsed, 3),
        "with_certificate": len(results["cert"]),
        "registered": len(results["node"]),
        "failures": len(failures),
        "first_failures": failures[:3],
        "client": client_kind,
        "client_tls_handshakes_per_join": round(lean.handshakes / max(nodes, 1), 2) if lean else None,
        "retries_or_warnings": events.retries + (lean.retries if lean else 0),
        "retry_samples": events.samples,
        "retry_causes": dict(lean.retry_causes.most_common()) if lean else None,
        "time_to_csr_created_s": summary([t - t0 for t in events.created]),
        "time_to_certificate_s": summary(results["cert"]),
        "time_to_node_s": summary(results["node"]),
        "target_s": _STORM_TARGETS.get(nodes),
        "met_target": not failures and elapsed <= _STORM_TARGETS.get(nodes, float("inf")),
        "processes": {
            k: {
                "cpu_seconds": round(after[k]["cpu_seconds"] - before[k]["cpu_seconds"], 2),
                "rss_mib": round(after[k]["rss_mib"], 1),
                "peak_rss_mib": round(after[k]["peak_rss_mib"], 1),
            }
            for k in after
        },
        "apiserver_cpu_ms_per_join": round(
            1000 * (after["apiserver"]["cpu_seconds"] - before["apiserver"]["cpu_seconds"]) / max(nodes, 1), 2
        ),
        "controller_manager_cpu_ms_per_join": round(
            1000
            * (after["controller_manager"]["cpu_seconds"] - before["controller_manager"]["cpu_seconds"])
            / max(nodes, 1),
            2,
        ),
        "benchmark_process_cpu_seconds": round(time.process_time() - cpu0, 2),
    }


def start_timed(api: Any, profile: Path | None, gc_log: Path | None = None) -> float:
    """Start the apiserver like `ApiServer.start`, and return the seconds from exec to its first ready answer
    (polled every 10 ms). With `profile`, the apiserver runs under cProfile and writes its profile there at exit;
    with `gc_log`, its garbage collector's pauses are logged there (benchmarks/gcpauses.py)."""
    import subprocess
    import urllib.request

    cmd = api.command()
    if profile is not None:
        cmd = [cmd[0], "-m", "cProfile", "-o", str(profile), *cmd[1:]]
    elif gc_log is not None:
        cmd = [cmd[0], str(HERE / "gcpauses.py"), str(gc_log), *cmd[1:]]
    env = dict(os.environ)
    env.pop("PYKUBEADM_ROOT_DIR", None)
    with open(api.log_path, "ab") as log:
        t0 = time.monotonic()
        api.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    ctx = api._ssl()
    deadline = t0 + 60
    while time.monotonic() < deadline:
        if api.proc.poll() is not None:
            raise RuntimeError(f"apiserver exited:\n{api.log_path.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{api.url}/readyz", context=ctx, timeout=2) as r:  # noqa: S310
                if r.status == 200:
                    return time.monotonic() - t0
        except OSError:  # not listening yet (URLError is an OSError)
            time.sleep(0.01)
    raise TimeoutError("apiserver not ready after 60 s")


def one_size(base: Path, nodes: int, args: argparse.Namespace, with_leases: bool) -> dict[str, Any]:
    """A fresh apiserver + controller-manager, one storm of `nodes` kubelets (and the Lease phase when asked)."""
    out: dict[str, Any] = {}
    profile = base / f"apiserver-{nodes}.prof" if args.profile else None
    reads, writes = (int(x) for x in args.max_inflight.split(","))
    flags = [f"--max-requests-inflight={reads}", f"--max-mutating-requests-inflight={writes}"]
    api = ApiServer(base / f"api-{nodes}", storage=args.storage, audit_log=False, extra_flags=flags)
    try:
        gc_log = base / f"apiserver-gc-{nodes}.jsonl"
        out["apiserver_exec_to_ready_s"] = round(start_timed(api, profile, gc_log), 3)
        kubeadm_rbac(api)
        if not token_request_available(api):
            grant_controller_roles_to_kcm_user(api)
        (base / f"kcm-{nodes}").mkdir()
        kcm = ControllerManager(api, base / f"kcm-{nodes}").start(timeout=60)
        try:
            assert kcm.proc is not None
            out["storm"] = asyncio.run(storm(api, kcm.proc.pid, nodes, base / f"nodes-{nodes}", args.storm_client))
            if with_leases:
                out["leases"] = asyncio.run(
                    lease_phase(api, args.lease_nodes, args.lease_seconds, args.lease_client, gc_log)
                )
        finally:
            kcm.stop()
    finally:
        api.stop(timeout=60)
    if profile is not None and profile.exists():
        import pstats

        dest = Path(args.profile) / profile.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(profile.read_bytes())
        out["profile"] = str(dest)
        pstats.Stats(str(dest), stream=sys.stderr).sort_stats("tottime").print_stats(25)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="1000", help="comma-separated storm sizes, each against a fresh control plane")
    ap.add_argument("--lease-nodes", type=int, default=0)
    ap.add_argument("--lease-seconds", type=float, default=30.0)
    ap.add_argument(
        "--lease-client",
        choices=("lean", "kubelet"),
        default="lean",
        help="lean: raw HTTP/1.1 renewers (cheap load generator); kubelet: the kubelet's NodeAgent",
    )
    ap.add_argument(
        "--storm-client",
        choices=("lean", "kubelet"),
        default="lean",
        help="lean: simulated kubelets with a small client-side cost (raw HTTP/1.1, two TLS connections per node, "
        "the same requests); kubelet: the kubelet's own CertificateManager and NodeAgent over httpx",
    )
    ap.add_argument("--storage", default="sqlite", help="sqlite (default), memory, or an etcd URL")
    ap.add_argument(
        "--max-inflight",
        default="3000,1000",
        help="the apiserver's --max-requests-inflight,--max-mutating-requests-inflight (kube's defaults are 400,200; "
        "3000,1000 is what Kubernetes' scalability guidance sets for clusters of thousands of nodes)",
    )
    ap.add_argument("--profile", default="", help="a directory: run the apiserver under cProfile, one file per size")
    args = ap.parse_args()
    sizes = [int(n) for n in args.nodes.split(",") if n.strip()]
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # thousands of connections, inherited by the servers
    out: dict[str, Any] = {
        "benchmark": "bootstrap_storm",
        "cpus": os.cpu_count(),
        "max_inflight": args.max_inflight,
        "loadavg_at_start": os.getloadavg(),
    }
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bootstrap-storm-") as tmp:
        global _CLIENT_GC_LOG
        _CLIENT_GC_LOG = Path(tmp) / "benchmark-gc.jsonl"
        gcpauses.install(_CLIENT_GC_LOG)
        for i, nodes in enumerate(sizes):
            run = one_size(Path(tmp), nodes, args, with_leases=bool(args.lease_nodes) and i == len(sizes) - 1)
            runs.append(run)
            s = run["storm"]
            api_p = s["processes"]["apiserver"]
            print(
                f"nodes={nodes}: all joined in {s['all_joined_s']} s, failures {s['failures']}, apiserver "
                f"{s['apiserver_cpu_ms_per_join']} ms CPU/join, peak RSS {api_p['peak_rss_mib']} MiB, "
                f"controller-manager {s['controller_manager_cpu_ms_per_join']} ms CPU/join, benchmark process "
                f"{s['benchmark_process_cpu_seconds']} s CPU, apiserver exec→ready {run['apiserver_exec_to_ready_s']} s",
                file=sys.stderr,
                flush=True,
            )
    out["runs"] = runs
    if len(runs) > 1:
        first, last = runs[0]["storm"], runs[-1]["storm"]
        ratio = last["apiserver_cpu_ms_per_join"] / max(first["apiserver_cpu_ms_per_join"], 1e-9)
        out["growth"] = {
            "sizes": sizes,
            "apiserver_cpu_ms_per_join": [r["storm"]["apiserver_cpu_ms_per_join"] for r in runs],
            "apiserver_peak_rss_mib": [r["storm"]["processes"]["apiserver"]["peak_rss_mib"] for r in runs],
            "all_joined_s": [r["storm"]["all_joined_s"] for r in runs],
            "cpu_per_join_ratio_largest_to_smallest": round(ratio, 2),
            "target_ratio": 1.3,
            "met_ratio_target": ratio <= 1.3,
        }
    out["loadavg_at_end"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
