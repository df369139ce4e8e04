"""Benchmark (JSON on stdout): joins under an anonymous flood. A flood process sends anonymous GETs of
kube-public/cluster-info at a fixed rate (default 2000/s, open loop, from its own loopback address 127.0.0.2) while
N nodes join (default 100, arriving at --join-rate per second), each one the real code path: kubeadm's token
discovery (`discover_with_token`: anonymous cluster-info twice, JWS and CA pin checked), then the kubelet's TLS
bootstrap (CertificateManager: CSR, approval and signing by our kube-controller-manager) and Node registration.
The same joins run first without the flood. Target: every join succeeds, loaded p99 join time ≤ 2 × unloaded p99.

    .venv/bin/python benchmarks/anon_flood.py [--nodes 100] [--join-rate 10] [--flood-rate 2000] [--storage sqlite]

The flood's answers are counted by status (200 served, 429 refused by the per-client anonymous limit); its achieved
rate is reported, as a Python client on a shared 2-core machine may fall short of the asked one.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import multiprocessing as mp
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cryptography import x509
from tests.integration.controllers.harness import (
    ControllerManager,
    grant_controller_roles_to_kcm_user,
    kubeadm_rbac,
    token_request_available,
)
from tests.integration.kubelet.controlplane import create_or_replace, setup_bootstrap

from pykubeadm import constants as c
from pykubeadm.discovery.token import discover_with_token
from pykubeadm.kubelet.api import ClientConfig, KubeClient
from pykubeadm.kubelet.certmanager import CertificateManager
from pykubeadm.kubelet.certstore import CertPair, PairStore
from pykubeadm.kubelet.csr import client_template
from pykubeadm.kubelet.kubelet import pair_client_config
from pykubeadm.kubelet.node import NodeAgent, initial_node
from pykubeadm.phases.bootstraptoken import cluster_info_objects
from pykubeadm.pki.keys import public_key_pin
from pykubeadm.testing.apiserver import ApiServer

TOKEN_ID, TOKEN_SECRET = "flood0", "0123456789abcdef"
CLUSTER_INFO = f"/api/v1/namespaces/{c.NAMESPACE_PUBLIC}/configmaps/{c.CLUSTER_INFO_CONFIGMAP}"
FLOOD_SOURCE = "127.0.0.2"


def pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": round(pct(values, 50), 3),
        "p90": round(pct(values, 90), 3),
        "p99": round(pct(values, 99), 3),
        "max": round(max(values), 3) if values else 0.0,
        "mean": round(statistics.fmean(values), 3) if values else 0.0,
    }


# --- the flood process ----------------------------------------------------------------------------------------------


def flood_main(url: str, rate: float, stop: Any, out: Any) -> None:
    """Open-loop anonymous GETs of cluster-info at `rate`/s until `stop` is set; puts the counts on `out`."""
    import aiohttp

    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass

    async def run() -> dict[str, Any]:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        conn = aiohttp.TCPConnector(limit=128, ssl=ctx, local_addr=(FLOOD_SOURCE, 0))
        counts: dict[str, int] = {}
        outstanding = 0
        max_outstanding = 512
        skipped = 0

        async def one(session: aiohttp.ClientSession) -> None:
            nonlocal outstanding
            try:
                async with session.get(url + CLUSTER_INFO) as r:
                    await r.read()
                    key = str(r.status)
            except Exception as e:
                key = type(e).__name__
            finally:
                outstanding -= 1
            counts[key] = counts.get(key, 0) + 1

        tasks: set[asyncio.Task[None]] = set()
        async with aiohttp.ClientSession(connector=conn) as session:
            t0 = time.monotonic()
            sent = 0
            while not stop.is_set():
                now = time.monotonic()
                due = int((now - t0) * rate) - sent
                for _ in range(max(0, due)):
                    sent += 1
                    if outstanding >= max_outstanding:
                        skipped += 1
                        continue
                    outstanding += 1
                    t = asyncio.create_task(one(session))
                    tasks.add(t)
                    t.add_done_callback(tasks.discard)
                await asyncio.sleep(0.002)
            elapsed = time.monotonic() - t0
            if tasks:
                await asyncio.wait(tasks, timeout=30)
        answered = sum(v for k, v in counts.items() if k.isdigit())
        return {
            "asked_rate_per_s": rate,
            "seconds": round(elapsed, 2),
            "scheduled": sent,
            "not_sent_client_saturated": skipped,
            "answers_by_status": counts,
            "achieved_answer_rate_per_s": round(answered / elapsed, 1),
        }

    out.put(asyncio.run(run()))


# --- joins ----------------------------------------------------------------------------------------------------------


async def join(name: str, api: ApiServer, pin: str, root: Path) -> float:
    """One node joins: token discovery (kubeadm), TLS bootstrap and Node registration (kubelet); seconds taken."""
    t0 = time.monotonic()
    endpoint = f"{api.host}:{api.port}"
    found = await asyncio.to_thread(discover_with_token, endpoint, f"{TOKEN_ID}.{TOKEN_SECRET}", [pin], timeout=120)
    base = ClientConfig(server=found.server, ca_pem=found.ca_pem)
    boot = ClientConfig(server=found.server, ca_pem=found.ca_pem, token=f"{TOKEN_ID}.{TOKEN_SECRET}")
    store = PairStore(root / name / "pki", "kubelet-client")

    def authenticated(pair: CertPair | None) -> ClientConfig:
        return pair_client_config(base, pair) if pair is not None else boot

    manager = CertificateManager(store, lambda: client_template(name), authenticated=authenticated, name=name)
    pair = await manager.rotate_with_backoff()
    client = KubeClient(pair_client_config(base, pair))
    try:
        await NodeAgent(
            client, initial_node(name, hostname=name, node_ip=None, version="v1.33.0", root=root)
        ).register()
    finally:
        await client.close()
    return time.monotonic() - t0


async def joins(api: ApiServer, pin: str, root: Path, prefix: str, nodes: int, rate: float) -> dict[str, Any]:
    async def later(i: int) -> float:
        await asyncio.sleep(i / rate)
        return await join(f"{prefix}-{i:04d}", api, pin, root)

    t0 = time.monotonic()
    outcomes = await asyncio.gather(*(later(i) for i in range(nodes)), return_exceptions=True)
    times = [o for o in outcomes if isinstance(o, float)]
    failures = [repr(o) for o in outcomes if isinstance(o, BaseException)]
    return {
        "joined": len(times),
        "failures": len(failures),
        "first_failures": failures[:3],
        "wall_s": round(time.monotonic() - t0, 2),
        "join_time_s": summary(times),
    }


async def prepare(api: ApiServer) -> str:
    admin = KubeClient(
        ClientConfig(
            server=api.url,
            ca_pem=api.pki.ca_cert.read_bytes(),
            cert_pem=api.pki.admin_cert.read_bytes(),
            key_pem=api.pki.admin_key.read_bytes(),
        )
    )
    try:
        await setup_bootstrap(admin, TOKEN_ID, TOKEN_SECRET, dt.timedelta(hours=2))
        cm, rbac = cluster_info_objects(api.url, api.pki.ca_cert.read_bytes())
        await create_or_replace(admin, f"/api/v1/namespaces/{c.NAMESPACE_PUBLIC}/configmaps", cm)
        await create_or_replace(
            admin, f"/apis/rbac.authorization.k8s.io/v1/namespaces/{c.NAMESPACE_PUBLIC}/roles", rbac[0]
        )
        await create_or_replace(
            admin, f"/apis/rbac.authorization.k8s.io/v1/namespaces/{c.NAMESPACE_PUBLIC}/rolebindings", rbac[1]
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the bootstrap signer adds the token's JWS
            data = (await admin.get(CLUSTER_INFO)).get("data") or {}
            if f"{c.JWS_SIGNATURE_KEY_PREFIX}{TOKEN_ID}" in data:
                break
            await asyncio.sleep(0.2)
        else:
            raise TimeoutError("cluster-info was not signed within 60 s")
    finally:
        await admin.close()
    ca = x509.load_pem_x509_certificate(api.pki.ca_cert.read_bytes())
    return public_key_pin(ca.public_key())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--join-rate", type=float, default=10.0, help="joins started per second")
    ap.add_argument("--flood-rate", type=float, default=2000.0, help="anonymous cluster-info GETs per second")
    ap.add_argument("--storage", default="sqlite")
    args = ap.parse_args()
    out: dict[str, Any] = {"nodes": args.nodes, "join_rate_per_s": args.join_rate}
    with tempfile.TemporaryDirectory(prefix="anon-flood-") as tmp:
        base = Path(tmp)
        api = ApiServer(base / "api", storage=args.storage, audit_log=False)
        api.start(timeout=60)
        try:
            kubeadm_rbac(api)
            if not token_request_available(api):
                grant_controller_roles_to_kcm_user(api)
            (base / "kcm").mkdir()
            kcm = ControllerManager(api, base / "kcm").start(timeout=60)
            try:
                pin = asyncio.run(prepare(api))
                out["unloaded"] = asyncio.run(joins(api, pin, base / "nodes", "calm", args.nodes, args.join_rate))
                spawn = mp.get_context("spawn")
                queue: Any = spawn.Queue()
                stop = spawn.Event()
                flood = spawn.Process(target=flood_main, args=(api.url, args.flood_rate, stop, queue), daemon=True)
                flood.start()
                try:
                    time.sleep(3)  # let the flood reach its rate
                    out["flooded"] = asyncio.run(joins(api, pin, base / "nodes", "flood", args.nodes, args.join_rate))
                finally:
                    stop.set()
                    try:
                        out["flood"] = queue.get(timeout=60)
                    finally:
                        flood.join(10)
                        if flood.is_alive():
                            flood.terminate()
            finally:
                kcm.stop()
        finally:
            api.stop(timeout=60)
    un, fl = out["unloaded"]["join_time_s"]["p99"], out["flooded"]["join_time_s"]["p99"]
    out["p99_ratio"] = round(fl / un, 2) if un else None
    out["target"] = "all joins succeed; flooded p99 <= 2 x unloaded p99"
    out["met_target"] = (
        out["unloaded"]["failures"] == 0 and out["flooded"]["failures"] == 0 and fl <= 2 * un if un else False
    )
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
