"""100 Pods on one lab worker: create → Ready per Pod (p50/p99), delete → all gone, and the worker kubelet's CPU
and RSS at steady state (100 Pods running). Prints JSON.

`--runtime builtin` (the default): pause Pods on a loopback lab's worker, run by the built-in runtime.
`--runtime cri`: busybox Pods (the image built here from Debian's busybox-static and put on the node with `lab load`)
on a netns lab's worker whose kubelet runs them through its containerd (`lab up --runtime containerd`, registry off);
also the kubelet's CPU per Pod start (its CPU time from the first create to the last Ready, over the Pods) and the
node's containerd's RSS (and its shims' total) with all Pods running. Targets: create→Ready p99 <= 3 s, delete→gone
<= 5 s. Needs root and Debian's containerd, runc, the CNI plugins and busybox-static.

`container_setup` is what a container's own root layer and cgroups cost per container start (as root): the time until
the program runs with the sandbox launcher in namespaces only, against the same with the writable layer, a confined
identity and the container's cgroups made and joined as the pod worker does (containment.PodContainment); the
teardown at exit (the overlay's unmount) is reported apart, being off the start path.

Targets on a 2-core machine: create→Ready p99 <= 2 s, delete→gone <= 3 s, kubelet CPU <= 2 % of a core, RSS <= 100 MB.
Run: .venv/bin/python benchmarks/pods.py [--runtime builtin|cri] [--pods 100] [--steady 30]
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
BUSYBOX = "pykubeadm.bench/busybox:1.35"
#: busybox's sleep as PID 1 ignores SIGTERM: the shell ends on it, so a delete is not the grace period's 30 s.
BUSYBOX_COMMAND = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]


def _pykubeadm(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    return subprocess.run([sys.executable, "-m", "pykubeadm", *args], capture_output=True, text=True, env=env)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_busy_seconds() -> float:
    """CPU time the whole machine spent not idle (all cores, every process: other work on the machine included)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


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


def _lab_up(lab_dir: Path, runtime: str) -> None:
    """A 1 + 1 lab for the runtime; for cri, the busybox image loaded into its nodes."""
    if runtime == "cri":
        from pykubeadm.testing.images import write_busybox_image

        args = ["--topology", "netns", "--runtime", "containerd"]
    else:
        args = ["--topology", "loopback"]
    res = _pykubeadm("lab", "up", *args, "--dir", str(lab_dir), "--workers", "1")
    if res.returncode != 0:
        raise SystemExit(f"lab up failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    if runtime == "cri":
        archive = write_busybox_image(lab_dir.parent / "busybox.tar", BUSYBOX)
        res = _pykubeadm("lab", "load", "--dir", str(lab_dir), str(archive))
        if res.returncode != 0:
            raise SystemExit(f"lab load failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")


def _pod(i: int, runtime: str) -> dict[str, Any]:
    if runtime == "cri":
        container = {"name": "busybox", "image": BUSYBOX, "command": BUSYBOX_COMMAND}
        spec: dict[str, Any] = {"containers": [container], "nodeSelector": {"kubernetes.io/hostname": "lab-worker"}}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"busybox-{i}"}, "spec": spec}
    spec = {"containers": [{"name": "pause", "image": PAUSE}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pause-{i}"}, "spec": spec}


def _containerd(lab_dir: Path) -> dict[str, Any]:
    """The worker's containerd: its RSS, and its shims' (one per Pod) count and total RSS."""
    from pykubeadm.layout import Layout

    pid = int((lab_dir / ".lab/lab-worker-containerd.pid").read_text())
    socket = str(Layout(lab_dir / "lab-worker").containerd_socket)
    shims = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                args = (entry / "cmdline").read_bytes().split(b"\0")
                if b"-address" in args and socket.encode() in args:
                    shims.append(int(entry.name))
    return {
        "containerd_rss_mb": round(_rss_mb(pid), 1),
        "shims": len(shims),
        "shims_rss_mb_total": round(sum(_rss_mb(s) for s in shims), 1),
    }


def run(n: int, steady: float, runtime: str = "builtin") -> dict[str, Any]:
    from kubernetes import client, config

    with tempfile.TemporaryDirectory(prefix="pods-bench-") as tmp:
        lab_dir = Path(tmp) / "lab"
        try:
            _lab_up(lab_dir, runtime)
            # the host's kubeconfig: the API server published on 127.0.0.1 (a netns lab's own addresses are inside it)
            api = config.new_client_from_config(str(lab_dir / "kubeconfig"))
            v1 = client.CoreV1Api(api)
            kubelet = int((lab_dir / "lab-worker/var/run/pykubeadm/kubelet.pid").read_text())
            watcher = Watcher(api, client)
            watcher.start()
            time.sleep(1.0)  # the watch is established
            idle_rss = _rss_mb(kubelet)
            created: dict[str, float] = {}

            def create(i: int) -> None:
                body = _pod(i, runtime)
                created[body["metadata"]["name"]] = time.monotonic()
                v1.create_namespaced_pod("default", body)

            containerd = int((lab_dir / ".lab/lab-worker-containerd.pid").read_text()) if runtime == "cri" else None
            t0, cpu_start, busy_start = time.monotonic(), _cpu_seconds(kubelet), _machine_busy_seconds()
            containerd_start = _cpu_seconds(containerd) if containerd else 0.0
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(create, range(n)))
            deadline = time.monotonic() + 300
            while len(watcher.ready) < n and time.monotonic() < deadline:
                time.sleep(0.05)
            all_ready = time.monotonic() - t0
            started = max(1, len(watcher.ready))
            cpu_per_start_ms = (_cpu_seconds(kubelet) - cpu_start) / started * 1000
            machine_per_start_ms = (_machine_busy_seconds() - busy_start) / started * 1000
            containerd_per_start_ms = (
                (_cpu_seconds(containerd) - containerd_start) / started * 1000 if containerd else 0
            )
            latencies = [watcher.ready[k] - created[k] for k in created if k in watcher.ready]
            kubelet_part = [watcher.ready[k] - watcher.bound[k] for k in created if k in watcher.ready]
            time.sleep(5.0)  # settle, then measure steady state
            cpu0, w0 = _cpu_seconds(kubelet), time.monotonic()
            time.sleep(steady)
            cpu = (_cpu_seconds(kubelet) - cpu0) / (time.monotonic() - w0) * 100
            rss = _rss_mb(kubelet)
            runtime_side = _containerd(lab_dir) if runtime == "cri" else {}
            t1 = time.monotonic()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda k: v1.delete_namespaced_pod(k, "default"), list(created)))
            while time.monotonic() < t1 + 300 and (len(watcher.gone) < n or v1.list_namespaced_pod("default").items):
                time.sleep(0.05)
            delete_all = time.monotonic() - t1
            return {
                "runtime": runtime,
                "pods": n,
                "ready": len(latencies),
                "create_to_ready_p50_s": round(statistics.median(latencies), 3) if latencies else None,
                "create_to_ready_p99_s": round(_pct(latencies, 0.99), 3) if latencies else None,
                "create_to_all_ready_s": round(all_ready, 3),
                "bound_to_ready_p50_s": round(statistics.median(kubelet_part), 3) if kubelet_part else None,
                "bound_to_ready_p99_s": round(_pct(kubelet_part, 0.99), 3) if kubelet_part else None,
                "delete_to_all_gone_s": round(delete_all, 3),
                "kubelet_cpu_ms_per_pod_start": round(cpu_per_start_ms, 1),
                "machine_busy_cpu_ms_per_pod_start": round(machine_per_start_ms, 1),
                **({"containerd_cpu_ms_per_pod_start": round(containerd_per_start_ms, 1)} if containerd else {}),
                "kubelet_steady_cpu_pct_of_core": round(cpu, 2),
                "kubelet_rss_mb": round(rss, 1),
                "kubelet_idle_rss_mb": round(idle_rss, 1),
                **runtime_side,
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
    parser.add_argument("--runtime", choices=("builtin", "cri"), default="builtin")
    parser.add_argument("--pods", type=int, default=100)
    parser.add_argument("--steady", type=float, default=30.0)
    parser.add_argument("--setup-samples", type=int, default=50)
    args = parser.parse_args()
    out: dict[str, Any] = {}
    if args.runtime == "builtin":  # the built-in runtime's own container start
        out["container_setup"] = container_setup(args.setup_samples)
    if args.pods:
        out.update(run(args.pods, args.steady, args.runtime))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
