"""`lab down` of a 3-node lab whose Pods ignore SIGTERM (and ask for a long grace period): reset stops them anyway,
with SIGKILL after its own short window, and leaves no process, mount or namespace of the lab, and an empty lab dir.
How long it takes is measured by benchmarks/lab_up.py (--down-only), not asserted here."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_lab import Lab, _kill_leftovers, _lab_up, _processes_under, pykubeadm
from tests.e2e.test_pods import alive, apply, main_pid, pod_json, wait_for

from pykubeadm.phases.reset.processes import node_processes

pytestmark = pytest.mark.e2e

NODES = ("lab-control-plane", "lab-worker", "lab-worker2")
PODS = 10
NAMESPACES = ("mnt", "pid", "uts", "ipc", "net", "cgroup")


def stubborn_pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"stubborn-{i}"},
        "spec": {
            "terminationGracePeriodSeconds": 3600,
            "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", "trap '' TERM; sleep 3600"]}],
        },
    }


def tree(pid: int) -> list[int]:
    """`pid` and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
    return out


def ignores_sigterm(pid: int) -> bool:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) & (1 << 14))  # bit N-1 for signal N; SIGTERM is 15
    return False


def namespaces(pid: int) -> set[str]:
    """The namespaces of `pid` (as `mnt:[4026532...]`) that are not this test's own."""
    found = set()
    for kind in NAMESPACES:
        try:
            ns = os.readlink(f"/proc/{pid}/ns/{kind}")
        except OSError:
            continue
        if ns != os.readlink(f"/proc/self/ns/{kind}"):
            found.add(ns)
    return found


def live_namespaces() -> set[str]:
    """Every namespace some process is in, and every namespace a bind mount keeps (`ip netns add` style)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            for kind in NAMESPACES:
                with contextlib.suppress(OSError):
                    found.add(os.readlink(f"/proc/{entry}/ns/{kind}"))
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        root = line.split()[3]  # an nsfs mount's root is the namespace: "net:[4026532...]"
        if ":[" in root:
            found.add(root)
    return found


def mounts_under(path: Path) -> list[str]:
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [p for p in points if p == str(path) or p.startswith(f"{path}/")]


def test_lab_down_stops_pods_that_ignore_sigterm_and_leaves_nothing(tmp_path: Path) -> None:
    lab_dir = tmp_path / "lab"
    lab: Lab | None = None
    try:
        lab = _lab_up(lab_dir, "--workers", "2")
        for i in range(PODS):
            apply(lab, stubborn_pod(i))

        def all_running() -> list[dict[str, Any]] | None:
            pods = [pod_json(lab, f"stubborn-{i}") for i in range(PODS)]
            ok = all(p and p["status"].get("phase") == "Running" and p["status"].get("containerStatuses") for p in pods)
            return pods if ok else None  # type: ignore[return-value]

        pods = wait_for(all_running, 120, "the stubborn Pods Running")
        assert {p["spec"]["nodeName"] for p in pods} == {"lab-worker", "lab-worker2"}
        mains = [main_pid(lab, p) for p in pods]
        stubborn = [[p for p in tree(pid) if ignores_sigterm(p)] for pid in mains]
        assert all(stubborn), stubborn  # what each Pod runs really ignores SIGTERM
        before = {pid for n in NODES for pid in node_processes(lab.root(n))} | {p for ps in stubborn for p in ps}
        pod_namespaces = {ns for pid in before for ns in namespaces(pid)}
        assert pod_namespaces, "the Pods run in no namespace of their own"

        res = pykubeadm("lab", "down", "--dir", str(lab_dir))
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        for n in NODES:
            assert f"[lab] reset {n}\n" in res.stdout
        assert "still running after the resets" not in res.stdout  # each node's reset stopped its own Pods

        assert _processes_under(lab_dir) == []
        assert [n for n in NODES if node_processes(lab.root(n))] == []
        assert [pid for pid in before if alive(pid)] == []
        assert mounts_under(lab_dir) == []
        # a killed Pod process whose parent died with it is a zombie until the host's init reaps it: its namespaces
        # go with it
        wait_for(lambda: not pod_namespaces & live_namespaces(), 60, "the Pods' namespaces to be gone")
        assert list(lab_dir.iterdir()) == []
    finally:
        if lab_dir.exists() and any(lab_dir.iterdir()):
            pykubeadm("lab", "down", "--dir", str(lab_dir))
        _kill_leftovers(lab_dir)
