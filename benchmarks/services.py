"""Benchmark: kube-proxy with 1000 Services × 2 endpoints — EndpointSlice change → traffic following it, and RSS.

    .venv/bin/python benchmarks/services.py [--services 1000] [--changes 40] [--modes userspace,nftables]

For each mode: a real apiserver (loopback service range), one kube-proxy process, `--services` ClusterIP Services
each with an EndpointSlice of 2 ready endpoints (backends A, B). Then `--changes` times: pick a Service, replace its
slice's endpoints by (C, D) — or back — and poll its ClusterIP (a new connection each time) until the answer comes
from the new pair; the time from just before the PUT to that answer is one sample. Also: time until all Services are
programmed after the bulk create, and kube-proxy's RSS (its own process_resident_memory_bytes). The nftables mode runs
in a network namespace the benchmark makes (root and `nft` needed; skipped otherwise), with the poller inside it.
Prints one JSON object. Targets: p99 ≤ 1 s in both modes, RSS ≤ 80 MB.

    .venv/bin/python benchmarks/services.py --topology netns [--services 1000] [--changes 40] [--load-seconds 5]

`--topology netns` (root; under the machine's lab lock): a network-namespace lab (`lab up --topology netns
--workers 1`: kube-proxy in nftables mode in each node's namespace, kindnet), 4 backend Pods answering their own Pod
IP on port 80 and a client Pod. The `--services` Services get EndpointSlices of backends (A, B); each change moves one
to (C, D) or back and is timed from the PUT until the client Pod's requests to its ClusterIP answer from the new pair
(`follow_*`), with the worker's kube-proxy's own `kubeproxy_sync_proxy_rules_duration_seconds` (`sync_*`, from its
metrics in the node's namespace; p99 is the upper bound of its histogram bucket). Then HTTP requests per second from
the client Pod, one new connection per request (each through the Service's DNAT, conntrack and back), to the backends'
Pod IPs (A and B in turn) and to the ClusterIP of a Service of (A, B): `rps_cluster_ip_over_pod_ip`, target ≥ 0.8;
the same with one kept connection per thread (`..._keepalive`: the Service's cost is then per connection, not per
request). `sync_*` count only the syncs during the changes (`sync_all_since_start`: every one, the first full ones).
Every request is sent from inside the client Pod's network namespace (nsenter --net on its pinned namespace); the
host's namespace only talks to the lab through `<lab>/kubeconfig` (127.0.0.1).
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


def helper_load(urls: list[str], seconds: float, threads: int, keepalive: bool) -> None:
    """GET `urls` in turn from `threads` threads for `seconds`, a new connection per request (or, with `keepalive`,
    one connection per thread and URL, kept); prints the requests per second answered (and how many failed)."""
    import http.client
    from urllib.parse import urlsplit

    targets = [urlsplit(u) for u in urls]
    counts = [0] * threads
    failures = [0] * threads
    stop = time.monotonic() + seconds

    def worker(k: int) -> None:
        kept: dict[int, http.client.HTTPConnection] = {}
        i = k
        while time.monotonic() < stop:
            t = targets[i % len(targets)]
            conn = kept.pop(i % len(targets), None) or http.client.HTTPConnection(t.hostname or "", t.port or 80, 5)
            try:
                conn.request("GET", t.path or "/", headers={} if keepalive else {"Connection": "close"})
                conn.getresponse().read()
                counts[k] += 1
                if keepalive:
                    kept[i % len(targets)] = conn
                else:
                    conn.close()
            except OSError:
                failures[k] += 1
                conn.close()
            i += 1
        for conn in kept.values():
            conn.close()

    began = time.monotonic()
    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    print(json.dumps({"rps": sum(counts) / (time.monotonic() - began), "failed": sum(failures)}), flush=True)


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


def _poll(poller: subprocess.Popen[Any], ip: str, want: list[str], limit: float) -> float:
    """Ask the poller (helper_poller) when `ip`:80 first answered from `want`; -1 if not within `limit` seconds."""
    assert poller.stdin is not None and poller.stdout is not None
    poller.stdin.write(f"http://{ip}:80/ {','.join(want)} {limit}\n")
    poller.stdin.flush()
    return float(poller.stdout.readline())


def _follow_changes(
    admin: Any, poller: subprocess.Popen[Any], ips: dict[str, str], names: list[str], backends: list[str], **kw: Any
) -> list[float]:
    """`changes` times: move a Service of `names` from backends (A, B) to (C, D) or back, and time the PUT of its
    EndpointSlice until its ClusterIP answers from the new pair (kw: changes, port, node, what)."""
    from lightkube.resources.discovery_v1 import EndpointSlice

    samples: list[float] = []
    current = dict.fromkeys(names, 0)
    for _ in range(kw["changes"]):
        name = random.choice(names)
        new = 1 - current[name]
        pair = backends[2:] if new else backends[:2]
        live = admin.get(EndpointSlice, f"{name}-bench", namespace="default").to_dict()
        live["endpoints"] = _slice(name, pair, kw["port"], kw["node"])["endpoints"]
        start = time.monotonic()
        admin.replace(EndpointSlice.from_dict(live))
        done = _poll(poller, ips[name], pair, 30)
        if done < 0:
            raise RuntimeError(f"{kw['what']}: traffic never followed the change of {name}")
        samples.append(done - start)
        current[name] = new
        time.sleep(0.2)
    return samples


def _follow_figures(samples: list[float]) -> dict[str, Any]:
    return {
        "changes": len(samples),
        "follow_p50_seconds": round(statistics.median(samples), 4),
        "follow_p99_seconds": round(_percentile(samples, 99), 4),
        "follow_max_seconds": round(max(samples), 4),
    }


def _slice(name: str, ips: list[str], port: int, node: str = NODE) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": f"{name}-bench", "namespace": "default", "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True}, "nodeName": node} for ip in ips],
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
    }


async def _bulk_create(kubeconfig: Path, n: int, ips: list[str], port: int, node: str = NODE) -> dict[str, str]:
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
            await client.create(EndpointSlice.from_dict(_slice(name, ips, port, node)))
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

            names = sorted(ips)
            # all programmed: the last Service created answers
            if (
                _poll(poller, ips[names[-1]], backends[:2], 300) < 0
                or _poll(poller, ips[names[0]], backends[:2], 60) < 0
            ):
                raise RuntimeError(f"{mode}: services never answered; see {workdir}")
            startup_s = time.monotonic() - t1
            samples = _follow_changes(
                admin, poller, ips, names, backends, changes=changes, port=port, node=NODE, what=mode
            )
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
                **_follow_figures(samples),
                "kube_proxy_rss_mb": round(rss / 2**20, 1) if rss else None,
            }
    finally:
        for p in reversed(procs):
            _stop(p)
        if ns:
            subprocess.run(["ip", "netns", "del", ns], check=False)


# --- against a network-namespace lab ------------------------------------------------------------------------------

#: The backends' program (image python:3): answers every GET with the address it was reached on (its Pod IP).
_BACKEND_CODE = """
import http.server, socketserver
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK wait on a kept connection
    def do_GET(self):
        body = self.connection.getsockname()[0].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 256
S(("", 80), H).serve_forever()
"""
_LAB_WORKER = "lab-worker"


def _pykubeadm(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "pykubeadm", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def _lab_pods(client: Any, labels: str, count: int) -> list[dict[str, Any]]:
    """The `count` Running Pods with `labels`, once each has its Pod IP."""
    from lightkube.resources.core_v1 import Pod

    def ready() -> list[dict[str, Any]] | None:
        pods = [p.to_dict() for p in client.list(Pod, namespace="default", labels=dict([labels.split("=")]))]
        up = [p for p in pods if (p.get("status") or {}).get("phase") == "Running" and p["status"].get("podIP")]
        return up if len(up) == count else None

    return list(_wait(ready, 180, f"{count} Pods {labels} running"))


def _sync_histogram(lab_dir: Path, node: str) -> dict[float, float]:
    """The node's kube-proxy's kubeproxy_sync_proxy_rules_duration_seconds: cumulative count per bucket bound (inf:
    every sync), with the sum under the key -1."""
    res = _pykubeadm("lab", "exec", "--dir", str(lab_dir), node, "--", "curl", "-s", "http://127.0.0.1:10249/metrics")
    out: dict[float, float] = {}
    for line in res.stdout.splitlines():
        if line.startswith("kubeproxy_sync_proxy_rules_duration_seconds_bucket"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            out[float("inf") if le == "+Inf" else float(le)] = float(line.split()[-1])
        elif line.startswith("kubeproxy_sync_proxy_rules_duration_seconds_sum "):
            out[-1.0] = float(line.split()[1])
    return out


def _sync_figures(before: dict[float, float], after: dict[float, float]) -> dict[str, Any]:
    """The syncs between two readings of the histogram: how many, their mean, the bucket bounds of p50 and p99."""
    delta = {le: n - before.get(le, 0.0) for le, n in after.items()}
    count = delta.get(float("inf"), 0.0)

    def bound(q: float) -> float | None:
        return next((le for le, n in sorted(delta.items()) if le >= 0 and count and n >= q * count), None)

    return {
        "syncs": int(count),
        "sync_mean_seconds": round(delta.get(-1.0, 0.0) / count, 4) if count else None,
        "sync_p50_le_seconds": bound(0.5),
        "sync_p99_le_seconds": bound(0.99),
    }


def run_lab(n: int, changes: int, load_seconds: float, workdir: Path) -> dict[str, Any]:
    from lightkube.resources.apps_v1 import Deployment
    from lightkube.resources.core_v1 import Pod

    from pykubeadm.client import sync_client
    from pykubeadm.layout import Layout

    lab_dir = workdir / "lab"
    res = _pykubeadm("lab", "up", "--topology", "netns", "--workers", "1", "--dir", str(lab_dir))
    procs: list[subprocess.Popen[Any]] = []
    try:
        if res.returncode != 0:
            raise RuntimeError(f"lab up failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
        kubeconfig = lab_dir / "kubeconfig"
        admin = sync_client(kubeconfig, timeout=60)
        labels = {"app": "bench-web"}
        backend = {"name": "web", "image": "python:3", "command": ["python3", "-c", _BACKEND_CODE]}
        admin.create(
            Deployment.from_dict(
                {
                    "metadata": {"name": "bench-web", "namespace": "default"},
                    "spec": {
                        "replicas": 4,
                        "selector": {"matchLabels": labels},
                        "template": {"metadata": {"labels": labels}, "spec": {"containers": [backend]}},
                    },
                }
            )
        )
        sleeper = {"name": "client", "image": "python:3", "command": ["python3", "-c", "import time; time.sleep(1e9)"]}
        admin.create(
            Pod.from_dict(
                {
                    "metadata": {"name": "bench-client", "namespace": "default", "labels": {"app": "bench-client"}},
                    "spec": {"containers": [sleeper]},
                }
            )
        )
        pods = _lab_pods(admin, "app=bench-web", 4)
        client_pod = _lab_pods(admin, "app=bench-client", 1)[0]
        backends = sorted(p["status"]["podIP"] for p in pods)
        node = client_pod["spec"]["nodeName"]
        netns = Layout(lab_dir / node).pod_dir(client_pod["metadata"]["uid"]) / "netns"
        me = [sys.executable, str(Path(__file__).resolve())]

        def in_client(argv: list[str], log: str, **kw: Any) -> subprocess.Popen[Any]:
            """A process in the client Pod's network namespace (and nowhere else)."""
            return _start(["nsenter", f"--net={netns}", *argv], workdir / log, **kw)

        t0 = time.monotonic()
        ips = asyncio.run(_bulk_create(kubeconfig, n, backends[:2], 80, node))
        create_s = time.monotonic() - t0
        t1 = time.monotonic()
        poller = in_client(
            [*me, "--helper", "poller"], "poller.log", stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        procs.append(poller)

        names = sorted(ips)
        if _poll(poller, ips[names[-1]], backends[:2], 300) < 0 or _poll(poller, ips[names[0]], backends[:2], 60) < 0:
            raise RuntimeError(f"lab: services never answered; see {workdir}")
        programmed_s = time.monotonic() - t1
        before = _sync_histogram(lab_dir, node)
        # names[0] stays on (A, B) for the requests-per-second test
        samples = _follow_changes(
            admin, poller, ips, names[1:], backends, changes=changes, port=80, node=node, what="lab"
        )
        after = _sync_histogram(lab_dir, node)

        def load(urls: list[str], how: str) -> dict[str, Any]:
            argv = [*me, "--helper", "load", str(load_seconds), "8", how, *urls]
            proc = in_client(argv, "load.log", stdout=subprocess.PIPE, text=True)
            out, _ = proc.communicate(timeout=load_seconds + 60)
            return dict(json.loads(out))

        pod_ip_urls = [f"http://{ip}:80/" for ip in backends[:2]]
        cluster_ip_urls = [f"http://{ips[names[0]]}:80/"]
        rps: dict[str, Any] = {}
        failed = 0
        for how in ("close", "keepalive"):
            rounds = [
                (load(pod_ip_urls, how), load(cluster_ip_urls, how)) for _ in range(2)
            ]  # interleaved: load drifts
            pod_rps = statistics.mean(r[0]["rps"] for r in rounds)
            svc_rps = statistics.mean(r[1]["rps"] for r in rounds)
            failed += sum(r[0]["failed"] + r[1]["failed"] for r in rounds)
            suffix = "" if how == "close" else "_keepalive"
            rps[f"rps_pod_ip{suffix}"] = round(pod_rps, 1)
            rps[f"rps_cluster_ip{suffix}"] = round(svc_rps, 1)
            rps[f"rps_cluster_ip_over_pod_ip{suffix}"] = round(svc_rps / pod_rps, 3) if pod_rps else None
        admin.close()
        return {
            "mode": "nftables in a netns lab (1 control plane + 1 worker)",
            "services": n,
            "endpoints_per_service": 2,
            "create_seconds": round(create_s, 2),
            "create_to_all_programmed_seconds": round(programmed_s, 2),
            **_follow_figures(samples),
            **_sync_figures(before, after),
            "sync_all_since_start": _sync_figures({}, after),
            **rps,
            "rps_failed_requests": failed,
            "rps_client": f"8 threads from the client Pod, {load_seconds:g} s per round, 2 rounds each; rps_*: a new "
            "connection per request (each one DNATed and tracked), rps_*_keepalive: one kept connection per thread",
        }
    finally:
        for p in reversed(procs):
            _stop(p)
        _pykubeadm("lab", "down", "--dir", str(lab_dir))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--helper":
        if sys.argv[2] == "backends":
            helper_backends(int(sys.argv[3]), sys.argv[4:])
        elif sys.argv[2] == "load":
            helper_load(sys.argv[6:], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "keepalive")
        else:
            helper_poller()
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=40)
    parser.add_argument("--modes", default="userspace,nftables")
    parser.add_argument("--topology", default="", help="netns: against a network-namespace lab (root)")
    parser.add_argument("--load-seconds", type=float, default=5.0)
    args = parser.parse_args()
    results: dict[str, Any] = {"benchmark": "services", "targets": {"follow_p99_seconds": 1.0, "kube_proxy_rss_mb": 80}}
    runs = []
    if args.topology == "netns":
        results["targets"] = {"follow_p99_seconds": 1.0, "rps_cluster_ip_over_pod_ip": 0.8}
        results["loadavg_at_start"] = os.getloadavg()
        with tempfile.TemporaryDirectory(prefix="kp-bench-") as tmp:
            runs.append(run_lab(args.services, args.changes, args.load_seconds, Path(tmp)))
        results["loadavg_at_end"] = os.getloadavg()
        results["runs"] = runs
        print(json.dumps(results, indent=2))
        return
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
