"""A Deployment of N pause replicas over a lab's workers: create → all Ready, a full rolling update (new image) → all
Ready again, and kube-controller-manager's CPU seconds and RSS (its peak) during each phase; then a StatefulSet of M
replicas with one claim each (the lab's default class `standard`, provisioned by the local-path provisioner), created
→ all Ready with `OrderedReady` and again with `Parallel`. Prints JSON.

Targets on a 2-core machine, 500 replicas over 5 workers: all Ready <= 30 s, rolling update <= 60 s, controller-manager
RSS <= 150 MB; 20 StatefulSet replicas: OrderedReady <= 20 s, Parallel <= 8 s. The machine is shared: the load average
before and after is part of the output.
Run: .venv/bin/python benchmarks/workloads.py [--replicas 500] [--workers 5] [--statefulset-replicas 20]
     [--phases deployment,statefulset]
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


def _deployment_phase(
    client: Any, kcm: int, sched: int, n: int, timeout: float, idle_rss: float, peak: PeakRss
) -> dict[str, Any]:
    from lightkube.resources.apps_v1 import Deployment

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
    return {
        "replicas": n,
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
    }


def _statefulset(name: str, n: int, policy: str) -> dict[str, Any]:
    labels = {"app": name}
    container = {"name": "pause", "image": PAUSE, "volumeMounts": [{"name": "data", "mountPath": "/data"}]}
    claim = {"metadata": {"name": "data"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": n,
            "serviceName": name,
            "podManagementPolicy": policy,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            "volumeClaimTemplates": [claim],
        },
    }


def _statefulset_phase(client: Any, kcm: int, sched: int, n: int, timeout: float) -> dict[str, Any]:
    """Each management policy in turn: create the set, wait until all replicas are Ready (their claims provisioned
    and bound first), record the time and the controller-manager's and scheduler's CPU seconds."""
    from lightkube.resources.apps_v1 import StatefulSet

    out: dict[str, Any] = {"replicas": n, "claims_per_replica": 1}
    for policy in ("OrderedReady", "Parallel"):
        name = f"bench-{policy.lower()}"
        cpu0, sched0 = _cpu_seconds(kcm), _cpu_seconds(sched)
        start = time.monotonic()
        client.create(StatefulSet.from_dict(_statefulset(name, n, policy)))
        while True:
            st = client.get(StatefulSet, name, namespace="default").status
            if st and st.readyReplicas == n:
                break
            if time.monotonic() - start > timeout:
                raise TimeoutError(f"statefulset {name}: {st and st.readyReplicas} of {n} Ready after {timeout}s")
            time.sleep(0.1)
        out[policy] = {
            "all_ready_s": round(time.monotonic() - start, 2),
            "controller_manager_cpu_s": round(_cpu_seconds(kcm) - cpu0, 2),
            "scheduler_cpu_s": round(_cpu_seconds(sched) - sched0, 2),
        }
        client.delete(StatefulSet, name, namespace="default")
    out["targets"] = {"OrderedReady_all_ready_s": 20, "Parallel_all_ready_s": 8}
    return out


def run(
    n: int,
    workers: int,
    timeout: float,
    sts_replicas: int = 20,
    phases: tuple[str, ...] = ("deployment", "statefulset"),
) -> dict[str, Any]:
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
            result: dict[str, Any] = {"workers": workers}
            with sync_client(cp / "etc/kubernetes/admin.conf") as client:
                if "deployment" in phases:
                    result.update(_deployment_phase(client, kcm, sched, n, timeout, idle_rss, peak))
                if "statefulset" in phases:
                    result["statefulset"] = _statefulset_phase(client, kcm, sched, sts_replicas, timeout)
            peak.done.set()
            peak.join(2)
            result["machine"] = {
                "cores": os.cpu_count(),
                "loadavg_before": [round(x, 2) for x in load_before],
                "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            }
            return result
        finally:
            _pykubeadm("lab", "down", "--dir", str(lab_dir))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=500)
    parser.add_argument("--workers", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--statefulset-replicas", type=int, default=20)
    parser.add_argument("--phases", default="deployment,statefulset", help="comma-separated: deployment, statefulset")
    args = parser.parse_args()
    phases = tuple(p.strip() for p in args.phases.split(",") if p.strip())
    unknown = set(phases) - {"deployment", "statefulset"}
    if unknown:
        parser.error(f"--phases: unknown phase(s) {', '.join(sorted(unknown))}: use deployment and/or statefulset")
    print(json.dumps(run(args.replicas, args.workers, args.timeout, args.statefulset_replicas, phases), indent=2))


if __name__ == "__main__":
    main()
