"""A Deployment of N pause replicas over a lab's workers: create → all Ready, a full rolling update (new image) → all
Ready again, and kube-controller-manager's CPU seconds and RSS (its peak) during each phase. Prints JSON.

Targets on a 2-core machine, 500 replicas over 5 workers: all Ready <= 30 s, rolling update <= 60 s, controller-manager
RSS <= 150 MB. The machine is shared: the load average before and after is part of the output.
Run: .venv/bin/python benchmarks/workloads.py [--replicas 500] [--workers 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from pods import _cpu_seconds, _rss_mb  # benchmarks/pods.py: /proc readings

PAUSE = "registry.k8s.io/pause:3.10"
PAUSE_NEXT = "registry.k8s.io/pause:3.9"
ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"},
    "PYKUBEADM_LAB_ADDRESS_PREFIX": os.environ.get("PYKUBEADM_LAB_ADDRESS_PREFIX", "127.0.17."),
}


def _pykubeadm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykubeadm", *args], capture_output=True, text=True, env=ENV)


def _component_pid(root: Path, name: str) -> int:
    """The Python process of a control-plane component of the node at `root` (by its command line, within the node's
    processes: never by name alone)."""
    from pykubeadm.phases.reset.processes import node_processes

    for pid in node_processes(root):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"component" in args and name.encode() in args:
            return pid
    raise RuntimeError(f"no {name} process under {root}")


class PeakRss(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0.0, threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.5):
            try:
                self.peak = max(self.peak, _rss_mb(self.pid))
            except OSError:
                return


def _deployment(n: int) -> dict[str, Any]:
    labels = {"app": "bench"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": {
            "replicas": n,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "pause", "image": PAUSE}]}},
        },
    }


def _rolled_out(dep: Any, n: int) -> bool:
    st = dep.status
    return bool(
        st
        and (st.observedGeneration or 0) >= (dep.metadata.generation or 0)
        and st.updatedReplicas == n
        and st.replicas == n
        and st.availableReplicas == n
    )


def _wait(client: Any, n: int, timeout: float) -> float:
    from lightkube.resources.apps_v1 import Deployment

    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if _rolled_out(client.get(Deployment, "bench", namespace="default"), n):
            return time.monotonic() - start
        time.sleep(0.25)
    raise TimeoutError(f"deployment not rolled out after {timeout}s")


def run(n: int, workers: int, timeout: float) -> dict[str, Any]:
    from lightkube.resources.apps_v1 import Deployment

    from pykubeadm.client import sync_client

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-workloads-") as tmp:
        lab_dir = Path(tmp) / "lab"
        up = _pykubeadm("lab", "up", "--topology", "loopback", "--dir", str(lab_dir), "--workers", str(workers))
        if up.returncode != 0:
            raise RuntimeError(f"lab up failed: {up.stdout[-2000:]}{up.stderr[-2000:]}")
        try:
            cp = lab_dir / "lab-control-plane"
            kcm = _component_pid(cp, "kube-controller-manager")
            sched = _component_pid(cp, "kube-scheduler")
            idle_rss = _rss_mb(kcm)
            peak = PeakRss(kcm)
            peak.start()
            with sync_client(cp / "etc/kubernetes/admin.conf") as client:
                cpu0, sched0 = _cpu_seconds(kcm), _cpu_seconds(sched)
                client.create(Deployment.from_dict(_deployment(n)))
                ready_s = _wait(client, n, timeout)
                cpu1, sched1 = _cpu_seconds(kcm), _cpu_seconds(sched)
                rss_after_create = _rss_mb(kcm)
                patch = {"spec": {"template": {"spec": {"containers": [{"name": "pause", "image": PAUSE_NEXT}]}}}}
                client.patch(Deployment, "bench", patch, namespace="default")
                time.sleep(0.5)  # observedGeneration must move past the patch before "rolled out" means anything
                rollout_s = 0.5 + _wait(client, n, timeout)
                cpu2, sched2 = _cpu_seconds(kcm), _cpu_seconds(sched)
            peak.done.set()
            peak.join(2)
            return {
                "replicas": n,
                "workers": workers,
                "all_ready_s": round(ready_s, 2),
                "rolling_update_s": round(rollout_s, 2),
                "controller_manager": {
                    "cpu_s_create": round(cpu1 - cpu0, 2),
                    "cpu_s_rollout": round(cpu2 - cpu1, 2),
                    "rss_idle_mb": round(idle_rss, 1),
                    "rss_after_create_mb": round(rss_after_create, 1),
                    "rss_peak_mb": round(max(peak.peak, rss_after_create), 1),
                },
                "scheduler_cpu_s": {"create": round(sched1 - sched0, 2), "rollout": round(sched2 - sched1, 2)},
                "targets": {"all_ready_s": 30, "rolling_update_s": 60, "controller_manager_rss_mb": 150},
                "machine": {
                    "cores": os.cpu_count(),
                    "loadavg_before": [round(x, 2) for x in load_before],
                    "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                },
            }
        finally:
            _pykubeadm("lab", "down", "--dir", str(lab_dir))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=500)
    parser.add_argument("--workers", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    print(json.dumps(run(args.replicas, args.workers, args.timeout), indent=2))


if __name__ == "__main__":
    main()
