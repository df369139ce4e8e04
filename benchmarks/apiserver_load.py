"""Apiserver load benchmark (JSON on stdout): concurrent clients over TLS keep-alive with client certificates doing
GET and PUT of ConfigMaps against a real `pykubeadm component kube-apiserver` process, plus the raw storage engine's
ops/s through the Store interface in the same run, giving the apiserver's overhead ratio.

    .venv/bin/python benchmarks/apiserver_load.py [--engine all|sqlite|etcd|memory] [--seconds 10] [--processes 2]
        [--concurrency 8] [--objects 100]

The server runs with its default audit logging (one JSON line per request to stdout, captured in a file).

Targets (2-core machine, load generator included): SQLite ≥ 1500 GET/s, ≥ 500 PUT/s, p99 ≤ 100 ms, overhead ≤ 3×.

`http_tls_floor` is the same load against a do-nothing server in the same stack (aiohttp on uvloop, the apiserver's
TLS settings, client certificates) that answers every request with a fixed ConfigMap: the most any Python HTTP server
here can serve. It is what the overhead ratio is up against when the raw engine is an in-process read: a SQLite point
read costs a few microseconds, a TLS request round trip tens of them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import os
import socket
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp

from pykubeadm.apiserver.server import build_ssl_context
from pykubeadm.storage import open_store
from pykubeadm.testing.apiserver import ApiServer, free_port, generate_pki
from pykubeadm.testing.etcd import EtcdCluster
from pykubeadm.util import aio

NS = "bench"


def _ssl(pki: dict[str, str]) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=pki["ca"])
    ctx.load_cert_chain(pki["cert"], pki["key"])
    return ctx


async def _client_phase(
    url: str, pki: dict[str, str], op: str, seconds: float, concurrency: int, objects: int, worker: int
) -> list[float]:
    lat: list[float] = []
    conn = aiohttp.TCPConnector(ssl=_ssl(pki), limit=concurrency)
    async with aiohttp.ClientSession(connector=conn) as s:
        deadline = time.perf_counter() + seconds

        async def one(i: int) -> None:
            n = i
            while time.perf_counter() < deadline:
                name = f"cm-{n % objects}"
                n += concurrency
                t = time.perf_counter()
                if op == "GET":
                    async with s.get(f"{url}/api/v1/namespaces/{NS}/configmaps/{name}") as r:
                        await r.read()
                        ok = r.status == 200
                else:
                    body = {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": name, "namespace": NS},
                        "data": {"n": str(n), "w": str(worker)},
                    }
                    async with s.put(f"{url}/api/v1/namespaces/{NS}/configmaps/{name}", json=body) as r:
                        await r.read()
                        ok = r.status == 200
                if not ok:
                    raise RuntimeError(f"{op} {name}: HTTP {r.status}")
                lat.append(time.perf_counter() - t)

        await asyncio.gather(*(one(worker * concurrency + i) for i in range(concurrency)))
    return lat


def _worker(args: tuple[str, dict[str, str], str, float, int, int, int]) -> list[float]:
    url, pki, op, seconds, concurrency, objects, worker = args
    return asyncio.run(_client_phase(url, pki, op, seconds, concurrency, objects, worker))


def _stats(op: str, lat: list[float], seconds: float) -> dict[str, Any]:
    lat = sorted(lat)
    q = statistics.quantiles(lat, n=100) if len(lat) > 1 else [lat[0]] * 99
    return {
        "op": op,
        "requests": len(lat),
        "req_per_s": round(len(lat) / seconds, 1),
        "p50_ms": round(q[49] * 1000, 2),
        "p99_ms": round(q[98] * 1000, 2),
    }


async def _raw_store(url: str, seconds: float, concurrency: int, objects: int) -> dict[str, Any]:
    store = await open_store(url)
    try:
        prefix = "/registry/configmaps/rawbench/"
        for i in range(objects):
            await store.create(f"{prefix}cm-{i}", b'{"metadata":{"name":"x"},"data":{"n":"0"}}')
        out = {}
        for op in ("get", "update"):
            count = 0
            deadline = time.perf_counter() + seconds

            async def one(i: int, op: str = op, deadline: float = deadline) -> None:
                nonlocal count
                n = i
                while time.perf_counter() < deadline:
                    key = f"{prefix}cm-{n % objects}"
                    n += concurrency
                    if op == "get":
                        await store.get(key)
                    else:
                        await store.update(key, b'{"metadata":{"name":"x"},"data":{"n":"%d"}}' % n, 0)
                    count += 1

            await asyncio.gather(*(one(i) for i in range(concurrency)))
            out[f"{op}_ops_per_s"] = round(count / seconds, 1)
        return out
    finally:
        await store.close()


def _run_load(url: str, pki: dict[str, str], args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    for op in ("GET", "PUT"):
        jobs = [(url, pki, op, args.seconds, args.concurrency, args.objects, w) for w in range(args.processes)]
        if args.processes == 1:
            lats = [_worker(jobs[0])]
        else:
            with mp.get_context("spawn").Pool(args.processes) as pool:
                lats = pool.map(_worker, jobs)
        results.append(_stats(op, [x for lat in lats for x in lat], args.seconds))
    return results


def _floor_server(port: int, tls: dict[str, str]) -> None:
    """A server that does nothing but TLS, HTTP and a fixed JSON answer (run in its own process)."""
    from aiohttp import web

    body = json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": NS}, "data": {"n": "0"}}
    ).encode()

    async def get(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    async def put(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=body, content_type="application/json")

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/api/v1/namespaces/{ns}/configmaps/{name}", get)
        app.router.add_put("/api/v1/namespaces/{ns}/configmaps/{name}", put)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        ctx = build_ssl_context(SimpleNamespace(**tls))  # type: ignore[arg-type]
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=ctx).start()
        await asyncio.Event().wait()

    aio.run(main())


def http_tls_floor(args: argparse.Namespace) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as d:
        pki = generate_pki(Path(d))
        port = free_port()
        tls = {
            "tls_cert_file": str(pki.serving_cert),
            "tls_private_key_file": str(pki.serving_key),
            "client_ca_file": str(pki.ca_cert),
            "requestheader_client_ca_file": None,
        }
        proc = mp.get_context("spawn").Process(target=_floor_server, args=(port, tls), daemon=True)
        proc.start()
        try:
            deadline = time.monotonic() + 20
            while True:
                with contextlib.suppress(OSError):
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                if time.monotonic() > deadline or not proc.is_alive():
                    raise RuntimeError("the floor server did not start")
                time.sleep(0.05)
            client = {"ca": str(pki.ca_cert), "cert": str(pki.admin_cert), "key": str(pki.admin_key)}
            return _run_load(f"https://127.0.0.1:{port}", client, args)
        finally:
            proc.terminate()
            proc.join(10)


def run_engine(engine: str, args: argparse.Namespace) -> dict[str, Any]:
    """One engine: the apiserver on it under load, then the raw store through the Store interface."""
    with tempfile.TemporaryDirectory() as d, contextlib.ExitStack() as stack:
        storage = engine
        raw_url = "memory://" if engine == "memory" else f"sqlite://{d}/raw.db"
        if engine == "etcd":
            cluster = stack.enter_context(EtcdCluster(Path(d) / "etcd", 1))
            storage = raw_url = cluster.url
        api = ApiServer(Path(d), storage=storage, audit_log=False)
        api.start()
        try:
            c = api.python_client()
            from kubernetes import client

            v1 = client.CoreV1Api(c)
            v1.create_namespace({"metadata": {"name": NS}})
            for i in range(args.objects):
                v1.create_namespaced_config_map(NS, {"metadata": {"name": f"cm-{i}"}, "data": {"n": "0"}})
            c.close()
            pki = {"ca": str(api.pki.ca_cert), "cert": str(api.pki.admin_cert), "key": str(api.pki.admin_key)}
            results = _run_load(api.url, pki, args)
        finally:
            api.stop()
        # the raw engine on the same event loop the apiserver runs on
        raw = aio.run(_raw_store(raw_url, min(args.seconds, 5.0), args.concurrency, args.objects))
    by_op = {r["op"]: r for r in results}
    out: dict[str, Any] = {
        "engine": engine,
        "results": results,
        "raw_store": raw,
        "overhead_ratio": {
            "get": round(raw["get_ops_per_s"] / max(by_op["GET"]["req_per_s"], 0.1), 2),
            "put": round(raw["update_ops_per_s"] / max(by_op["PUT"]["req_per_s"], 0.1), 2),
        },
    }
    if engine == "sqlite":
        out["targets"] = {"get_per_s": 1500, "put_per_s": 500, "p99_ms": 100, "overhead_ratio": 3}
        out["targets_met"] = {
            "get_per_s": by_op["GET"]["req_per_s"] >= 1500,
            "put_per_s": by_op["PUT"]["req_per_s"] >= 500,
            "p99_ms": max(by_op["GET"]["p99_ms"], by_op["PUT"]["p99_ms"]) <= 100,
            "overhead_ratio": max(out["overhead_ratio"].values()) <= 3,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", default="all", choices=["all", "sqlite", "etcd", "memory"])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--concurrency", type=int, default=8, help="concurrent keep-alive requests per load process")
    ap.add_argument("--processes", type=int, default=2, help="load-generator processes (one per core)")
    ap.add_argument("--objects", type=int, default=100)
    args = ap.parse_args()
    engines = ["sqlite", "etcd"] if args.engine == "all" else [args.engine]
    floor = http_tls_floor(args)
    results = [run_engine(e, args) for e in engines]
    for r in results:
        served = {x["op"]: x["req_per_s"] for x in r["results"]}
        r["share_of_http_tls_floor"] = {
            x["op"].lower(): round(served[x["op"]] / max(x["req_per_s"], 0.1), 2) for x in floor
        }
    out = {
        "benchmark": "apiserver_load",
        "cpus": os.cpu_count(),
        "seconds_per_phase": args.seconds,
        "concurrency": args.concurrency * args.processes,
        "load_processes": args.processes,
        "http_tls_floor": floor,
        "engines": results,
    }
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
