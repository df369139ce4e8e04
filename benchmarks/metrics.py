"""Benchmark (JSON on stdout): the metrics server's scrape of 3 nodes with 100 Pods — CPU per scrape and RSS.

Three kubelet stand-ins on 127.0.0.1 (HTTPS, random ports) serve /metrics/resource as the kubelet renders it
(`kubelet.resourcemetrics.render_resource_metrics`, measured from /proc on every request) for 100 Pods split between
them. A child process loads the metrics server program's modules (pykubeadm.metricsserver.server: aiohttp, its
small API client, prometheus_client) and runs the scrape cycle the program runs every resolution — concurrent HTTPS requests
to the three nodes, parsing, storing the points — `--scrapes` times; it reports its CPU time (user + system) per
scrape, the median and the worst, and its resident set size at the end. Targets: ≤ 50 ms CPU per scrape, ≤ 60 MB RSS.

`program_rss_mb` is the whole program's: `pykubeadm component metrics-server` (as the addon's Pod runs it: its API
client, delegated authentication and authorization, self-signed serving certificate) against a real apiserver holding
the three Nodes and the 100 Pods, scraping the same stand-ins every 10 s; the most it held over two resolutions after
start-up (--program-seconds, 0 to skip).

    .venv/bin/python benchmarks/metrics.py [--pods 100] [--nodes 3] [--scrapes 20] [--program-seconds 25]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _child(ports: list[int], scrapes: int) -> dict[str, float]:
    from pykubeadm.metricsserver.scrape import Scraper
    from pykubeadm.metricsserver.server import MetricsServer  # noqa: F401  (the program's import footprint)
    from pykubeadm.metricsserver.storage import MetricsStorage
    from pykubeadm.util.tlscontext import insecure_client_context

    nodes = [
        {"metadata": {"name": f"node-{i}"},
         "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}}
        for i, port in enumerate(ports)
    ]  # fmt: skip
    scraper = Scraper(lambda: nodes, lambda: "token", insecure_client_context(), use_node_status_port=True,
                      address_types=("InternalIP",))  # fmt: skip
    storage = MetricsStorage()
    cpu: list[float] = []
    containers = 0
    try:
        for _ in range(scrapes):
            start = time.process_time()
            batch = await scraper.scrape()
            storage.store(batch)
            cpu.append((time.process_time() - start) * 1000)
            containers = sum(len(v) for v in batch.pods.values())
            await asyncio.sleep(0.05)
    finally:
        await scraper.close()
    return {
        "cpu_ms_per_scrape_median": round(statistics.median(cpu[1:] or cpu), 2),
        "cpu_ms_per_scrape_max": round(max(cpu[1:] or cpu), 2),
        "cpu_ms_first_scrape": round(cpu[0], 2),
        "rss_mb": round(_rss_mb(), 1),
        "containers_per_scrape": containers,
        "nodes_scraped": len(storage.node_names()),
    }


def _program_rss(ports: list[int], pods: int, seconds: float) -> float:
    """The metrics-server program's largest RSS over `seconds` after it started, against a real apiserver."""
    from pykubeadm.testing.apiserver import free_port, running_apiserver

    with tempfile.TemporaryDirectory() as tmp, running_apiserver(Path(tmp, "api"), audit_log=False) as api:
        from kubernetes import client

        v1 = client.CoreV1Api(api.python_client())
        for n, port in enumerate(ports):
            v1.create_node({"metadata": {"name": f"node-{n}"},
                            "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                                       "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}})  # fmt: skip
        v1.create_namespaced_service_account("default", {"metadata": {"name": "default"}})
        for i in range(pods):
            container = {"name": "app", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}
            v1.create_namespaced_pod("default", {"metadata": {"name": f"pod-{i}", "labels": {"app": "bench"}},
                                                 "spec": {"nodeName": f"node-{i % len(ports)}",
                                                          "containers": [container]}})  # fmt: skip
        Path(tmp, "certs").mkdir()
        kubeconfig = str(api.kubeconfig())
        args = [sys.executable, "-m", "pykubeadm", "component", "metrics-server", f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
                f"--cert-dir={Path(tmp, 'certs')}", f"--secure-port={free_port()}", "--bind-address=127.0.0.1",
                "--metric-resolution=10s", "--kubelet-insecure-tls", "--kubelet-use-node-status-port",
                "--kubelet-preferred-address-types=InternalIP"]  # fmt: skip
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        most = 0.0
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and proc.poll() is None:
                most = max(most, _rss_mb(proc.pid))
                time.sleep(0.5)
        finally:
            proc.terminate()
            proc.wait(10)
        return round(most, 1)


async def _serve(nodes: int, pods: int, scrapes: int, program_seconds: float) -> dict[str, object]:
    from aiohttp import web

    from pykubeadm.controllers.app.serving import self_signed_pair
    from pykubeadm.kubelet.resourcemetrics import ContainerTarget, render_resource_metrics

    cert, key = self_signed_pair("localhost", ["127.0.0.1"], [])
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "c").write_bytes(cert)
        Path(tmp, "k").write_bytes(key)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(Path(tmp, "c"), Path(tmp, "k"))
    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(pods)]  # one process per Pod, really measured
    runners, ports = [], []
    try:
        for n in range(nodes):
            targets = [
                ContainerTarget("app", "default", f"pod-{i}", p.pid) for i, p in enumerate(sleepers) if i % nodes == n
            ]

            async def handle(_: web.Request, targets: list[ContainerTarget] = targets) -> web.Response:
                body = await asyncio.to_thread(render_resource_metrics, targets)
                return web.Response(body=body, content_type="text/plain")

            app = web.Application()
            app.router.add_get("/metrics/resource", handle)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
            await site.start()
            runners.append(runner)
            ports.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        proc = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--child", ",".join(map(str, ports)), "--scrapes", str(scrapes),
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"the scraping child failed (exit {proc.returncode})")
        result: dict[str, object] = json.loads(out)
        if program_seconds > 0:
            result["program_rss_mb"] = await asyncio.to_thread(_program_rss, ports, pods, program_seconds)
    finally:
        for runner in runners:
            await runner.cleanup()
        for p in sleepers:
            p.kill()
            p.wait()
    return {"benchmark": "metrics-server scrape", "nodes": nodes, "pods": pods, "scrapes": scrapes, **result,
            "targets": {"cpu_ms_per_scrape": 50, "rss_mb": 60}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--pods", type=int, default=100)
    parser.add_argument("--scrapes", type=int, default=20)
    parser.add_argument("--program-seconds", type=float, default=25.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child([int(p) for p in args.child.split(",")], args.scrapes))))
        return
    os.environ.pop("PYKUBEADM_ROOT_DIR", None)
    print(json.dumps(asyncio.run(_serve(args.nodes, args.pods, args.scrapes, args.program_seconds)), indent=2))


if __name__ == "__main__":
    main()
