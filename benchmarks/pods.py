"""100 pause Pods on one lab worker: create → Ready per Pod (p50/p99), delete → all gone, and the worker kubelet's CPU
and RSS at steady state (100 Pods running). Prints JSON.

`container_setup` is what a container's own root layer and cgroups cost per container start (as root): the time until
the program runs with the sandbox launcher in namespaces only, against the same with the writable layer, a confined
identity and the container's cgroups made and joined as the pod worker does (containment.PodContainment); the
teardown at exit (the overlay's unmount) is reported apart, being off the start path.

Targets on a 2-core machine: create→Ready p99 <= 2 s, delete→gone <= 3 s, kubelet CPU <= 2 % of a core, RSS <= 100 MB.
Run: .venv/bin/python benchmarks/pods.py [--pods 100] [--steady 30]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

PAUSE = "registry.k8s.io/pause:3.10"


def _pykubeadm(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    return subprocess.run([sys.executable, "-m", "pykubeadm", *args], capture_output=True, text=True, env=env)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Watcher(threading.Thread):
    """Records when each Pod is first seen Ready and when it is deleted."""

    def __init__(self, api: Any, core: Any) -> None:
        super().__init__(daemon=True)
        self.v1 = core.CoreV1Api(api)
        self.bound: dict[str, float] = {}
        self.ready: dict[str, float] = {}
        self.gone: dict[str, float] = {}

    def run(self) -> None:
        with contextlib.suppress(Exception):  # the lab goes away at the end of the run
            self._watch()

    def _watch(self) -> None:
        from kubernetes import watch

        rv = self.v1.list_namespaced_pod("default").metadata.resource_version
        while True:
            for ev in watch.Watch().stream(
                self.v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=600
            ):
                pod, name = ev["object"], ev["object"].metadata.name
                rv = pod.metadata.resource_version
                now = time.monotonic()
                if ev["type"] == "DELETED":
                    self.gone.setdefault(name, now)
                    continue
                if pod.spec.node_name:
                    self.bound.setdefault(name, now)
                conds = pod.status.conditions or []
                if any(c.type == "Ready" and c.status == "True" for c in conds):
                    self.ready.setdefault(name, now)


def run(n: int, steady: float) -> dict[str, Any]:
    from kubernetes import client, config

    with tempfile.TemporaryDirectory(prefix="pods-bench-") as tmp:
        lab_dir = Path(tmp) / "lab"
        res = _pykubeadm("lab", "up", "--topology", "loopback", "--dir", str(lab_dir), "--workers", "1")
        if res.returncode != 0:
            raise SystemExit(f"lab up failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
        try:
            admin = lab_dir / "lab-control-plane/etc/kubernetes/admin.conf"
            api = config.new_client_from_config(str(admin))
            v1 = client.CoreV1Api(api)
            kubelet = int((lab_dir / "lab-worker/var/run/pykubeadm/kubelet.pid").read_text())
            watcher = Watcher(api, client)
            watcher.start()
            time.sleep(1.0)  # the watch is established
            idle_rss = _rss_mb(kubelet)
            created: dict[str, float] = {}

            def create(i: int) -> None:
                name = f"pause-{i}"
                body = {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name},
                    "spec": {"containers": [{"name": "pause", "image": PAUSE}]},
                }
                created[name] = time.monotonic()
                v1.create_namespaced_pod("default", body)

            t0 = time.monotonic()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(create, range(n)))
            deadline = time.monotonic() + 300
            while len(watcher.ready) < n and time.monotonic() < deadline:
                time.sleep(0.05)
            all_ready = time.monotonic() - t0
            latencies = [watcher.ready[k] - created[k] for k in created if k in watcher.ready]
            kubelet_part = [watcher.ready[k] - watcher.bound[k] for k in created if k in watcher.ready]
            time.sleep(5.0)  # settle, then measure steady state
            cpu0, w0 = _cpu_seconds(kubelet), time.monotonic()
            time.sleep(steady)
            cpu = (_cpu_seconds(kubelet) - cpu0) / (time.monotonic() - w0) * 100
            rss = _rss_mb(kubelet)
            t1 = time.monotonic()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda k: v1.delete_namespaced_pod(k, "default"), list(created)))
            while time.monotonic() < t1 + 300 and (len(watcher.gone) < n or v1.list_namespaced_pod("default").items):
                time.sleep(0.05)
            delete_all = time.monotonic() - t1
            return {
                "pods": n,
                "ready": len(latencies),
                "create_to_ready_p50_s": round(statistics.median(latencies), 3) if latencies else None,
                "create_to_ready_p99_s": round(_pct(latencies, 0.99), 3) if latencies else None,
                "create_to_all_ready_s": round(all_ready, 3),
                "bound_to_ready_p50_s": round(statistics.median(kubelet_part), 3) if kubelet_part else None,
                "bound_to_ready_p99_s": round(_pct(kubelet_part, 0.99), 3) if kubelet_part else None,
                "delete_to_all_gone_s": round(delete_all, 3),
                "kubelet_steady_cpu_pct_of_core": round(cpu, 2),
                "kubelet_rss_mb": round(rss, 1),
                "kubelet_idle_rss_mb": round(idle_rss, 1),
                "steady_window_s": steady,
                "cores": os.cpu_count(),
            }
        finally:
            _pykubeadm("lab", "down", "--dir", str(lab_dir))


def _launch_ms(argv: list[str]) -> tuple[float, float]:
    """(ms until the program runs, ms until it has exited and the container is torn down); the program is `date`."""
    t = time.time_ns()
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return (int(out) - t) / 1e6, (time.time_ns() - t) / 1e6


def container_setup(samples: int) -> dict[str, Any] | None:
    """Per container start: launcher with namespaces only vs with the root layer, confinement and cgroups (ms)."""
    from pykubeadm.kubelet.builtin import sandbox
    from pykubeadm.kubelet.builtin.containment import PodContainment
    from pykubeadm.layout import Layout

    if not sandbox.can_isolate():
        return None
    date = [shutil.which("date") or "/bin/date", "+%s%N"]
    with tempfile.TemporaryDirectory(prefix="setup-bench-") as tmp:
        layout = Layout(Path(tmp) / "node")
        spec = {"name": "c", "image": "busybox", "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}
        pod = {"metadata": {"name": "b", "namespace": "default", "uid": "bench"}, "spec": {"containers": [spec]}}
        containment = PodContainment(pod, layout.pod_dir("bench"), layout, isolated=True)
        containment.setup()
        plain, confined, ended, python_side = [], [], [], []
        try:
            for i in range(samples):
                plain.append(_launch_ms(sandbox.sandboxed_argv(date, [], hostname="b"))[0])
                t = time.perf_counter()
                launch = containment.launch(f"{i:064x}", spec, 0, False)
                argv = sandbox.sandboxed_argv(
                    date, [], hostname="b", root_layer=launch.root_layer, confine=launch.confine, cgroups=launch.cgroups
                )
                made = (time.perf_counter() - t) * 1000
                started, done = _launch_ms(argv)
                t = time.perf_counter()
                containment.exited(f"{i:064x}")
                python_side.append(made + (time.perf_counter() - t) * 1000)
                confined.append(made + started)
                ended.append(done)
        finally:
            containment.teardown()
    return {
        "samples": samples,
        "start_namespaces_only_p50_ms": round(statistics.median(plain), 2),
        "start_layer_confinement_cgroups_p50_ms": round(statistics.median(confined), 2),
        "start_layer_confinement_cgroups_p99_ms": round(_pct(confined, 0.99), 2),
        "overhead_per_start_p50_ms": round(statistics.median(confined) - statistics.median(plain), 2),
        "cgroups_make_and_remove_p50_ms": round(statistics.median(python_side), 2),
        "run_to_teardown_confined_p50_ms": round(statistics.median(ended), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=100)
    parser.add_argument("--steady", type=float, default=30.0)
    parser.add_argument("--setup-samples", type=int, default=50)
    args = parser.parse_args()
    out = {"container_setup": container_setup(args.setup_samples)}
    if args.pods:
        out.update(run(args.pods, args.steady))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
