"""Benchmark: N simulated kubelets join at once through the kubelet's own TLS-bootstrap code path.

Starts our kube-apiserver (generated PKI, SQLite) and our kube-controller-manager (kubeadm's flags: csrapproving +
csrsigning), creates a bootstrap token with kubeadm's RBAC, then runs N kubelets in this process. Each one uses the
same code as `pykubeadm component kubelet`: a `CertificateManager` with an empty cert store and the bootstrap token
(fresh ECDSA P-256 key, CSR `csr-xxxxx` for kubernetes.io/kube-apiserver-client-kubelet, wait by watch, store
`kubelet-client-<ts>.pem` + `-current.pem`), then a `NodeAgent` registering the Node with the new certificate. Reports
the time until every kubelet holds a signed certificate and has registered its Node, per-kubelet latencies, and CPU
seconds / peak RSS of the apiserver and controller-manager, with the apiserver's CPU per join. Each size in `--nodes`
runs against a fresh control plane in the same run, so the growth of the per-join cost is measured under one machine
load; the apiserver's exec → ready time is measured at each start. Optional second phase (after the last size): M
nodes renew their Leases every 10 s for S seconds (node certificates signed locally), reporting p50/p99.

Targets on a 2-core machine (issue #17): apiserver CPU per join at the largest size ≤ 1.3 × the smallest; apiserver
peak RSS ≤ 1 GiB at 5000 nodes; 1000 nodes ≤ 15 s, 5000 nodes ≤ 90 s; 5000 Lease renewers p99 ≤ 250 ms.

    .venv/bin/python benchmarks/bootstrap_storm.py --nodes 250,1000,5000 [--lease-nodes 5000 --lease-seconds 30]
        [--max-inflight 3000,1000] [--profile DIR]   → one line per size on stderr, JSON on stdout
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
from pykubeadm.testing.apiserver import ApiServer

TOKEN_ID, TOKEN_SECRET = "storm0", "0123456789abcdef"
#: Seconds until every node has joined (issue #17), by storm size.
_STORM_TARGETS = {1000: 15.0, 5000: 90.0}


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
        "target_p99_s": 0.25,
        "met_target": bool(latencies) and pct(latencies, 99) <= 0.25 and errors == 0,
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
    cpu0 = time.process_time()
    t0 = time.monotonic()
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
        "retries_or_warnings": events.retries,
        "retry_samples": events.samples,
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


def start_timed(api: Any, profile: Path | None) -> float:
    """Start the apiserver like `ApiServer.start`, and return the seconds from exec to its first ready answer
    (polled every 10 ms). With `profile`, the apiserver runs under cProfile and writes its profile there at exit."""
    import subprocess
    import urllib.request

    cmd = api.command()
    if profile is not None:
        cmd = [cmd[0], "-m", "cProfile", "-o", str(profile), *cmd[1:]]
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
        out["apiserver_exec_to_ready_s"] = round(start_timed(api, profile), 3)
        kubeadm_rbac(api)
        if not token_request_available(api):
            grant_controller_roles_to_kcm_user(api)
        (base / f"kcm-{nodes}").mkdir()
        kcm = ControllerManager(api, base / f"kcm-{nodes}").start(timeout=60)
        try:
            assert kcm.proc is not None
            out["storm"] = asyncio.run(storm(api, kcm.proc.pid, nodes, base / f"nodes-{nodes}"))
            if with_leases:
                out["leases"] = asyncio.run(lease_phase(api, args.lease_nodes, args.lease_seconds, args.lease_client))
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
