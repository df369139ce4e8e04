"""Store benchmark: ops/s and latency (p50/p99) of get, create, update (CAS) and watch delivery, per engine, with 1
and 16 concurrent clients. Prints one JSON document.

    .venv/bin/python benchmarks/store.py [--engines sqlite,sqlite-normal,etcd] [--ops N] [--seconds S]

Engines: `sqlite` (WAL, synchronous=FULL: the default), `sqlite-normal` (WAL, synchronous=NORMAL, for comparison),
`etcd` (one real etcd member on loopback, started here and stopped at the end), `etcd3` (three members; not in the
default set). Values are 1 KiB, the size of a
typical Kubernetes object. Watch delivery is the time from the start of an update call to the watcher receiving its
event, measured while 1 or 16 writers update in a loop. Every run is bounded by --ops operations and --seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from pykubeadm.storage import open_store
from pykubeadm.storage.interface import Store
from pykubeadm.testing.etcd import EtcdCluster

VALUE = b'{"kind":"ConfigMap","data":{"x":"' + b"x" * 990 + b'"}}'
TARGETS = {"sqlite_update_ops_per_s": 2000, "etcd_update_ops_per_s": 1000, "watch_p99_ms": 50}


def summary(lat: list[float], elapsed: float) -> dict[str, float]:
    lat = sorted(lat)
    if not lat:
        return {"ops": 0}
    return {
        "ops": len(lat),
        "ops_per_s": round(len(lat) / elapsed, 1),
        "p50_ms": round(lat[len(lat) // 2] * 1000, 3),
        "p99_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000, 3),
    }


async def run_clients(conc: int, ops: int, seconds: float, op: Callable[[int, int], Awaitable[None]]) -> dict:
    lat: list[float] = []
    deadline = time.perf_counter() + seconds
    per = max(1, ops // conc)

    async def client(c: int) -> None:
        for i in range(per):
            t = time.perf_counter()
            if t > deadline:
                return
            await op(c, i)
            lat.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(conc)))
    return summary(lat, time.perf_counter() - t0)


async def bench_engine(store: Store, tag: str, ops: int, seconds: float) -> dict:
    return {str(c): await bench_clients(store, f"/registry/bench-{tag}-{c}/", c, ops, seconds) for c in (1, 16)}


async def bench_clients(store: Store, base: str, conc: int, ops: int, seconds: float) -> dict:
    res: dict[str, dict] = {}

    async def create(c: int, i: int) -> None:
        await store.create(f"{base}create/{c}-{i}", VALUE)

    res["create"] = await run_clients(conc, ops, seconds, create)

    keys = [f"{base}obj/{c}" for c in range(conc)]
    revs = {k: (await store.create(k, VALUE)).mod_revision for k in keys}

    async def get(c: int, i: int) -> None:
        await store.get(keys[c])

    res["get"] = await run_clients(conc, ops, seconds, get)

    async def update(c: int, i: int) -> None:
        revs[keys[c]] = (await store.update(keys[c], VALUE, revs[keys[c]])).mod_revision

    res["update_cas"] = await run_clients(conc, ops, seconds, update)

    # watch delivery while `conc` writers update
    sent: dict[bytes, float] = {}
    delivery: list[float] = []
    it = store.watch(base + "obj/", 0)

    async def consume() -> None:
        async for ev in it:
            t = sent.pop(ev.kv.value[:24], None)
            if t is not None:
                delivery.append(time.perf_counter() - t)

    async def tagged(c: int, i: int) -> None:
        stamp = f"{c:08d}-{i:015d}".encode()
        sent[stamp] = time.perf_counter()
        revs[keys[c]] = (await store.update(keys[c], stamp + VALUE[24:], revs[keys[c]])).mod_revision

    reader = asyncio.ensure_future(consume())
    await asyncio.sleep(0.2)
    t0 = time.perf_counter()
    write = await run_clients(conc, ops, seconds, tagged)
    expected = write["ops"]
    drain = time.perf_counter() + 10
    while len(delivery) < expected and time.perf_counter() < drain:
        await asyncio.sleep(0.01)
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)
    await it.aclose()  # type: ignore[attr-defined]
    res["watch_delivery"] = summary(delivery, time.perf_counter() - t0) | {"lost": expected - len(delivery)}
    return res


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engines", default="sqlite,sqlite-normal,etcd")
    ap.add_argument("--ops", type=int, default=3000, help="operations per measurement")
    ap.add_argument("--seconds", type=float, default=5.0, help="time cap per measurement")
    args = ap.parse_args()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="store-bench-") as tmp:
        for engine in args.engines.split(","):
            cluster = None
            if engine in ("etcd", "etcd3"):
                cluster = EtcdCluster(Path(tmp) / engine, 3 if engine == "etcd3" else 1).start()
                url = cluster.url
            elif engine in ("sqlite", "sqlite-normal"):
                sync = "normal" if engine == "sqlite-normal" else "full"
                url = f"sqlite://{tmp}/{engine}.db?sync={sync}&compact_interval=0"
            else:
                raise SystemExit(f"unknown engine {engine}")
            try:
                store = await open_store(url)
                try:
                    results[engine] = await bench_engine(store, engine, args.ops, args.seconds)
                finally:
                    await store.close()
            finally:
                if cluster:
                    cluster.stop()
    checks = {}
    for engine, res in results.items():
        best = max(res[c]["update_cas"].get("ops_per_s", 0) for c in res)
        target = TARGETS["etcd_update_ops_per_s" if engine.startswith("etcd") else "sqlite_update_ops_per_s"]
        checks[f"{engine}: update_cas >= {target}/s"] = best >= target
        worst = max(res[c]["watch_delivery"].get("p99_ms", 1e9) for c in res)
        checks[f"{engine}: watch p99 <= {TARGETS['watch_p99_ms']} ms"] = worst <= TARGETS["watch_p99_ms"]
    doc = {
        "benchmark": "store",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "value_bytes": len(VALUE),
        "results": results,
        "targets": TARGETS,
        "checks": checks,
    }
    json.dump(doc, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    asyncio.run(main())
