"""Benchmark: kube-proxy with 1000 Services × 2 endpoints — EndpointSlice change → traffic following it, and RSS.

    .venv/bin/python benchmarks/services.py [--services 1000] [--changes 40] [--modes userspace,nftables]

For each mode: a real apiserver (loopback service range), one kube-proxy process, `--services` ClusterIP Services
each with an EndpointSlice of 2 ready endpoints (backends A, B). Then `--changes` times: pick a Service, replace its
slice's endpoints by (C, D) — or back — and poll its ClusterIP (a new connection each time) until the answer comes
from the new pair; the time from just before the PUT to that answer is one sample. Also: time until all Services are
programmed after the bulk create, and kube-proxy's RSS (its own process_resident_memory_bytes). The nftables mode runs
in a network namespace the benchmark makes (root and `nft` needed; skipped otherwise), with the poller inside it.
Prints one JSON object. Targets: p99 ≤ 1 s in both modes, RSS ≤ 80 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.server
import json
import os
import random
import shutil
import signal
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

NODE, NODE_IP = "bench-node", "127.0.10.231"
NS_NODE_IP = "10.210.0.1"
BACKENDS_LO = ["127.0.31.1", "127.0.31.2", "127.0.31.3", "127.0.31.4"]
BACKENDS_NS = ["10.210.0.2", "10.210.0.3", "10.210.0.4", "10.210.0.5"]


# --- helpers run as subprocesses (inside the namespace for nftables) -------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = self.server.server_address[0].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 128


def helper_backends(port: int, ips: list[str]) -> None:
    servers = [_Server((ip, port), _Handler) for ip in ips]
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    servers[0].serve_forever()


def _get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:  # noqa: S310
            return r.read().decode()
    except OSError:
        return ""


def helper_poller() -> None:
    """stdin lines `URL ip1,ip2 deadline_s` → stdout `monotonic_time_of_first_answer_from_the_set` (or -1)."""
    for line in sys.stdin:
        url, want, limit = line.split()
        wanted = set(want.split(","))
        deadline = time.monotonic() + float(limit)
        done = -1.0
        while time.monotonic() < deadline:
            if _get(url) in wanted:
                done = time.monotonic()
                break
        print(done, flush=True)


# --- driver ---------------------------------------------------------------------------------------------------------


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def _start(argv: list[str], log: Path, ns: str | None = None, **kw: Any) -> subprocess.Popen[Any]:
    full = ["ip", "netns", "exec", ns, *argv] if ns else argv
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    fh = open(log, "ab")  # noqa: SIM115 - owned by the process
    try:
        return subprocess.Popen(full, stdout=kw.pop("stdout", fh), stderr=fh, env=env, start_new_session=True, **kw)
    finally:
        fh.close()


def _stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait(cond: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            value = cond()
            if value:
                return value
        time.sleep(0.05)
    raise TimeoutError(what)


def _slice(name: str, ips: list[str], port: int) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": f"{name}-bench", "namespace": "default", "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True}, "nodeName": NODE} for ip in ips],
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
    }


async def _bulk_create(kubeconfig: Path, n: int, ips: list[str], port: int) -> dict[str, str]:
    from lightkube.resources.core_v1 import Service
    from lightkube.resources.discovery_v1 import EndpointSlice

    from pykubeadm.client import async_client

    client = async_client(kubeconfig, timeout=60)
    sem = asyncio.Semaphore(16)
    out: dict[str, str] = {}

    async def one(i: int) -> None:
        name = f"bench-{i:04d}"
        async with sem:
            svc = await client.create(
                Service.from_dict(
                    {
                        "metadata": {"name": name, "namespace": "default"},
                        "spec": {"ports": [{"name": "http", "port": 80}]},
                    }
                )
            )
            await client.create(EndpointSlice.from_dict(_slice(name, ips, port)))
            out[name] = svc.spec.clusterIP

    try:
        await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await client.close()
    return out


def _metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def run_mode(mode: str, n: int, changes: int, workdir: Path) -> dict[str, Any]:
    from lightkube.resources.core_v1 import Node, NodeStatus
    from lightkube.resources.discovery_v1 import EndpointSlice

    from pykubeadm.api.componentconfigs import default_kube_proxy_config
    from pykubeadm.client import sync_client
    from pykubeadm.testing.apiserver import free_port, running_apiserver

    ns = f"kp-bench-{uuid.uuid4().hex[:8]}" if mode == "nftables" else None
    procs: list[subprocess.Popen[Any]] = []
    backends = BACKENDS_NS if ns else BACKENDS_LO
    node_ip = NS_NODE_IP if ns else NODE_IP
    service_range = f"127.{random.randint(100, 250)}.0.0/16"
    try:
        if ns:
            subprocess.run(["ip", "netns", "add", ns], check=True)
            for argv in (
                ["ip", "link", "set", "lo", "up"],
                ["ip", "link", "add", "kbv0", "type", "veth", "peer", "name", "kbv1"],
                ["ip", "addr", "add", f"{NS_NODE_IP}/24", "dev", "kbv0"],
                *(["ip", "addr", "add", f"{ip}/24", "dev", "kbv1"] for ip in backends),
                ["ip", "link", "set", "kbv0", "up"],
                ["ip", "link", "set", "kbv1", "up"],
            ):
                subprocess.run(["ip", "netns", "exec", ns, *argv], check=True)
        with running_apiserver(
            workdir / f"api-{mode}", extra_flags=[f"--service-cluster-ip-range={service_range}"], audit_log=False
        ) as api:
            admin = sync_client(api.kubeconfig())
            node = admin.create(Node.from_dict({"metadata": {"name": NODE}}))
            body = node.to_dict()
            body["status"] = {"addresses": [{"type": "InternalIP", "address": node_ip}]}
            admin.replace(NodeStatus.from_dict(body), NODE)
            port = 18080
            me = [sys.executable, str(Path(__file__).resolve())]
            backend = _start(
                [*me, "--helper", "backends", str(port), *backends],
                workdir / f"backends-{mode}.log",
                ns,
                stdout=subprocess.PIPE,
            )
            procs.append(backend)
            assert backend.stdout is not None and backend.stdout.readline().strip() == b"ready"
            kube_api = api.kubeconfig_for("system:kube-proxy")
            if ns:
                sock = workdir / f"api-{mode}.sock"
                relay = str(ROOT / "tests" / "integration" / "proxy" / "_relay.py")
                procs.append(
                    _start(
                        [sys.executable, relay, "unix-to-tcp", str(sock), api.host, str(api.port)],
                        workdir / "relay.log",
                    )
                )
                _wait(sock.exists, 30, "host relay")
                procs.append(
                    _start(
                        [sys.executable, relay, "tcp-to-unix", "127.0.0.1", str(api.port), str(sock)],
                        workdir / "relay.log",
                        ns,
                    )
                )
            t0 = time.monotonic()
            ips = asyncio.run(_bulk_create(api.kubeconfig(), n, backends[:2], port))
            create_s = time.monotonic() - t0
            healthz, metrics_port = free_port(), free_port()
            doc = default_kube_proxy_config(user={"mode": mode if mode == "nftables" else ""})
            doc["clientConnection"]["kubeconfig"] = str(kube_api)
            doc["healthzBindAddress"] = f"127.0.0.1:{healthz}"
            doc["metricsBindAddress"] = f"127.0.0.1:{metrics_port}"
            if not ns:
                doc["bindAddress"] = NODE_IP
            config = workdir / f"kube-proxy-{mode}.conf"
            config.write_text(yaml.safe_dump(doc))
            t1 = time.monotonic()
            kp = _start(
                [
                    sys.executable,
                    "-m",
                    "pykubeadm",
                    "component",
                    "kube-proxy",
                    f"--config={config}",
                    f"--hostname-override={NODE}",
                ],
                workdir / f"kube-proxy-{mode}.log",
                ns,
            )
            procs.append(kp)
            poller = _start(
                [*me, "--helper", "poller"],
                workdir / f"poller-{mode}.log",
                ns,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            procs.append(poller)

            def poll(ip: str, want: list[str], limit: float) -> float:
                assert poller.stdin is not None and poller.stdout is not None
                poller.stdin.write(f"http://{ip}:80/ {','.join(want)} {limit}\n")
                poller.stdin.flush()
                return float(poller.stdout.readline())

            names = sorted(ips)
            # all programmed: the last Service created answers
            if poll(ips[names[-1]], backends[:2], 300) < 0 or poll(ips[names[0]], backends[:2], 60) < 0:
                raise RuntimeError(f"{mode}: services never answered; see {workdir}")
            startup_s = time.monotonic() - t1
            samples: list[float] = []
            current = {name: 0 for name in names}
            for _ in range(changes):
                name = random.choice(names)
                new = 1 - current[name]
                pair = backends[2:] if new else backends[:2]
                live = admin.get(EndpointSlice, f"{name}-bench", namespace="default").to_dict()
                live.update({k: v for k, v in _slice(name, pair, port).items() if k in ("endpoints",)})
                start = time.monotonic()
                admin.replace(EndpointSlice.from_dict(live))
                done = poll(ips[name], pair, 30)
                if done < 0:
                    raise RuntimeError(f"{mode}: traffic never followed the change of {name}")
                samples.append(done - start)
                current[name] = new
                time.sleep(0.2)
            text = ""
            if ns:
                text = subprocess.run(
                    ["ip", "netns", "exec", ns, "curl", "-s", f"http://127.0.0.1:{metrics_port}/metrics"],
                    capture_output=True,
                    text=True,
                ).stdout
            else:
                text = _get(f"http://{NODE_IP}:{metrics_port}/metrics")
            rss = _metric(text, "process_resident_memory_bytes")
            return {
                "mode": mode,
                "services": n,
                "endpoints_per_service": 2,
                "create_seconds": round(create_s, 2),
                "kube_proxy_start_to_all_programmed_seconds": round(startup_s, 2),
                "changes": len(samples),
                "follow_p50_seconds": round(statistics.median(samples), 4),
                "follow_p99_seconds": round(_percentile(samples, 99), 4),
                "follow_max_seconds": round(max(samples), 4),
                "kube_proxy_rss_mb": round(rss / 2**20, 1) if rss else None,
            }
    finally:
        for p in reversed(procs):
            _stop(p)
        if ns:
            subprocess.run(["ip", "netns", "del", ns], check=False)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--helper":
        if sys.argv[2] == "backends":
            helper_backends(int(sys.argv[3]), sys.argv[4:])
        else:
            helper_poller()
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=40)
    parser.add_argument("--modes", default="userspace,nftables")
    args = parser.parse_args()
    results: dict[str, Any] = {"benchmark": "services", "targets": {"follow_p99_seconds": 1.0, "kube_proxy_rss_mb": 80}}
    runs = []
    with tempfile.TemporaryDirectory(prefix="kp-bench-") as tmp:
        for mode in args.modes.split(","):
            if mode == "nftables" and (os.geteuid() != 0 or shutil.which("nft") is None):
                runs.append({"mode": mode, "skipped": "needs root and nft"})
                continue
            runs.append(run_mode(mode, args.services, args.changes, Path(tmp)))
    results["runs"] = runs
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
