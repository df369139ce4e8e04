"""Benchmark: memory of an idle watch in the apiserver (what a kubelet waiting for its CSR costs the server).

Runs the apiserver's HTTP app in this process (aiohttp, in-memory store, no TLS: OpenSSL's per-connection buffers are
outside Python's allocator), opens N watches of CertificateSigningRequests, each with `fieldSelector=metadata.name=
<its own name>` as the kubelet does, over raw sockets, and measures with tracemalloc what the server side holds per
watch once they are all idle. Allocations made by this script's own client code are left out (tracemalloc filters
on this file). Also checks the fan-out: one CSR change reaches exactly one of the N watchers.

    .venv/bin/python benchmarks/watch_footprint.py [--watches 2000]   → JSON on stdout (target: ≤ 20 KiB per watch)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from aiohttp import web

from pykubeadm.apiserver.app import build_app
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.attributes import Decision
from pykubeadm.apiserver.bootstrap import ensure_builtin_objects
from pykubeadm.apiserver.discovery import version_info
from pykubeadm.apiserver.state import ApiState
from pykubeadm.storage.memory import MemoryStore

ADMIN = UserInfo("admin", groups=("system:masters", "system:authenticated"))
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


async def _admin(_req: Any) -> UserInfo:
    return ADMIN


async def _allow(_attrs: Any) -> tuple[Decision, str]:
    return Decision.ALLOW, ""


async def open_watch(port: int, name: str, rv: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A watch as the kubelet's CSR wait opens it: from the resourceVersion of its list."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET {CSRS}?watch=true&fieldSelector=metadata.name%3D{name}&resourceVersion={rv} HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nAccept: application/json\r\n\r\n".encode()
    )
    await writer.drain()
    line = await reader.readline()
    assert b" 200 " in line, line
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    return reader, writer


async def run(n: int) -> dict[str, Any]:
    state = ApiState(
        backend=MemoryStore(), version_info=version_info("v1.33.0"), authenticator=_admin, authorizer=_allow
    )
    await ensure_builtin_objects(state, "127.0.0.1", 6443, "10.96.0.1")
    runner = web.AppRunner(build_app(state, lambda _e: None), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    rv = await state.backend.current_revision()
    conns = [
        await open_watch(port, "warm-up", rv)
    ]  # first-use allocations (caches, the kind's watch cache) not counted
    await asyncio.sleep(0.2)
    gc.collect()
    tracemalloc.start(8)
    before = tracemalloc.take_snapshot()
    t0 = time.monotonic()
    for i in range(n):
        conns.append(await open_watch(port, f"csr-{i:05d}", rv))
    opened = time.monotonic() - t0
    await asyncio.sleep(0.5)  # every handler is now waiting on its watcher
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    mine = tracemalloc.Filter(False, __file__, all_frames=True)
    server_side = sum(
        s.size_diff for s in after.filter_traces([mine]).compare_to(before.filter_traces([mine]), "filename")
    )
    total = sum(s.size_diff for s in after.compare_to(before, "filename"))
    top = after.filter_traces([mine]).compare_to(before.filter_traces([mine]), "lineno")[:25]

    # Fan-out check: one new CSR reaches only its own watcher.
    store = state.store("certificatesigningrequests.certificates.k8s.io")
    cache = store._watch_cache
    offered = {"n": 0}
    from pykubeadm.apiserver.registry import watchcache

    original = watchcache.Watcher.offer

    def counting(self: Any, ch: Any) -> None:
        offered["n"] += 1
        original(self, ch)

    watchcache.Watcher.offer = counting  # type: ignore[method-assign]
    from pykubeadm.apiserver.registry import RequestContext

    await store.create(
        "",
        {
            "metadata": {"name": "csr-00007"},
            "spec": {
                "request": _csr_pem(),
                "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                "usages": ["digital signature", "client auth"],
            },
        },
        RequestContext(user=ADMIN),
    )
    reader = conns[8][0]
    line = b""
    deadline = time.monotonic() + 10
    while b"ADDED" not in line and time.monotonic() < deadline:
        line = await asyncio.wait_for(reader.readline(), 10)
    watchcache.Watcher.offer = original  # type: ignore[method-assign]
    for _r, w in conns:
        w.close()
    await runner.cleanup()
    return {
        "benchmark": "watch_footprint",
        "watches": n,
        "open_s": round(opened, 2),
        "server_bytes_per_idle_watch": round(server_side / n),
        "all_bytes_per_idle_watch_including_this_clients_sockets": round(total / n),
        "target_bytes": 20 * 1024,
        "met_target": server_side / n <= 20 * 1024,
        "watchers_in_cache": cache.watcher_count(),
        "watchers_offered_one_csr_change": offered["n"],
        "change_reached_its_watcher": b"ADDED" in line,
        "top_allocation_sites": [str(s) for s in top],
    }


def _csr_pem() -> str:
    import base64

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
                    x509.NameAttribute(NameOID.COMMON_NAME, "system:node:n7"),
                ]
            )
        )
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--watches", type=int, default=2000)
    args = ap.parse_args()
    print(json.dumps(asyncio.run(run(args.watches)), indent=2))


if __name__ == "__main__":
    main()
