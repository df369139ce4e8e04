"""The built-in runtime's cgroups, laid out as the kubelet's cgroupfs driver does: QoS classes, Pods, containers.

Used by the pod worker (API Pods in their own namespaces) and by /metrics/resource. `NodeCgroups.detect(name)` finds
the hierarchies (cgroup v1: one per controller under /sys/fs/cgroup/<controller>; v2: the unified tree) and roots the
node's `kubepods` below the kubelet's own cgroup in each, under `name` (distinct per node root, so several nodes of a
lab share one host). Below it, as the kubelet lays them out: Guaranteed Pods at `kubepods/pod<uid>`, Burstable at
`kubepods/burstable/pod<uid>`, BestEffort at `kubepods/besteffort/pod<uid>` (cpu shares 2), each container at
`pod<uid>/<container id>`. CPU requests become shares (v2: weight), CPU limits a CFS quota over a 100 ms period, memory
limits a hard limit, on the container and, summed, on the Pod (kube's ResourceConfigForPod); on cgroup v1 the devices
controller allows a container only runc's default devices unless it is privileged. The launcher joins the container's
cgroups (`procs_files()`) before it starts the program; after the exit `oom_killed()` tells an OOM kill from other
SIGKILLs, and `usage()` gives CPU and working-set memory for the resource metrics.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykubeadm.kubelet.resources import (
    CFS_PERIOD_US,
    Resources,
    container_resources,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
)

__all__ = ["ContainerCgroup", "NodeCgroups", "PodCgroup"]

log = logging.getLogger(__name__)

_MOUNT = Path("/sys/fs/cgroup")
#: The cgroup v1 hierarchies a container joins (those present).
_V1_CONTROLLERS = ("cpu", "cpuacct", "memory", "pids", "devices")
_REMOVE_WAIT = 5.0  # seconds reset waits for killed containers to leave their cgroups
#: runc's default device rules (what a container that is not privileged may use).
_DEVICE_RULES = (
    "c *:* m",
    "b *:* m",
    "c 1:3 rwm",  # null
    "c 1:5 rwm",  # zero
    "c 1:7 rwm",  # full
    "c 1:8 rwm",  # random
    "c 1:9 rwm",  # urandom
    "c 5:0 rwm",  # tty
    "c 5:1 rwm",  # console
    "c 5:2 rwm",  # ptmx
    "c 136:* rwm",  # pts
)


def _shares_to_weight(shares: int) -> int:
    """cgroup v2 cpu.weight for v1 shares (the conversion runc and the kubelet use)."""
    return 1 + ((shares - 2) * 9999) // 262142


def _pod_resources(containers: Iterable[Mapping[str, Any]]) -> Resources:
    """kube's ResourceConfigForPod: requests summed; a limit only when every container sets it."""
    parts = [container_resources(c) for c in containers]
    cpu_limits = [p.cpu_limit for p in parts]
    mem_limits = [p.memory_limit for p in parts]
    return Resources(
        sum(p.cpu_request for p in parts),
        sum(x for x in cpu_limits if x is not None) if parts and None not in cpu_limits else None,
        sum(x for x in mem_limits if x is not None) if parts and None not in mem_limits else None,
    )


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _read(path: Path) -> str:
    with open(path) as f:
        return f.read()


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup in each hierarchy: controller name (v2: "") → path."""
    out: dict[str, str] = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            out[name] = path
    return out


@dataclass
class _Dir:
    """One node of the layout: its directory in each hierarchy (controller → path; v2: {"": path})."""

    dirs: dict[str, Path]
    v2: bool

    def child(self, name: str) -> _Dir:
        return _Dir({k: p / name for k, p in self.dirs.items()}, self.v2)

    def make(self, settings: Iterable[tuple[str, str, str]] = ()) -> None:
        """Create the directories and write (controller, file, value) settings (v2: controller is ignored)."""
        for path in self.dirs.values():
            path.mkdir(exist_ok=True)
            if self.v2:
                with contextlib.suppress(OSError):  # what the parent may delegate: cpu, memory, pids
                    _write(path / "cgroup.subtree_control", "+cpu +memory +pids")
        for ctrl, name, value in settings:
            target = self.dirs[""] if self.v2 else self.dirs.get(ctrl)
            if target is not None:
                _write(target / name, value)

    def remove(self) -> None:
        for path in self.dirs.values():
            with contextlib.suppress(OSError):
                for child in path.iterdir():  # a container's cgroups left behind (an adopted Pod)
                    if child.is_dir():
                        child.rmdir()
                path.rmdir()

    def procs_files(self) -> list[str]:
        return [str(p / "cgroup.procs") for p in self.dirs.values()]


def _limits(res: Resources, v2: bool) -> list[tuple[str, str, str]]:
    shares = milli_cpu_to_shares(res.cpu_request)
    out: list[tuple[str, str, str]] = []
    if v2:
        out.append(("cpu", "cpu.weight", str(_shares_to_weight(shares))))
        if res.cpu_limit is not None:
            out.append(("cpu", "cpu.max", f"{milli_cpu_to_quota(res.cpu_limit)} {CFS_PERIOD_US}"))
        if res.memory_limit is not None:
            out.append(("memory", "memory.max", str(res.memory_limit)))
        return out
    out.append(("cpu", "cpu.shares", str(shares)))
    if res.cpu_limit is not None:
        out.append(("cpu", "cpu.cfs_period_us", str(CFS_PERIOD_US)))
        out.append(("cpu", "cpu.cfs_quota_us", str(milli_cpu_to_quota(res.cpu_limit))))
    if res.memory_limit is not None:
        out.append(("memory", "memory.limit_in_bytes", str(res.memory_limit)))
    return out


class ContainerCgroup:
    """One container instance's cgroup (`pod<uid>/<container id>`)."""

    def __init__(self, node: _Dir) -> None:
        self._dir = node

    def procs_files(self) -> list[str]:
        """The cgroup.procs files the launcher writes itself into (`pod-sandbox -C`)."""
        return self._dir.procs_files()

    def oom_killed(self) -> bool:
        """Whether the kernel's OOM killer killed a process of this container (memory.oom_control / memory.events)."""
        name = "memory.events" if self._dir.v2 else "memory.oom_control"
        path = self._dir.dirs.get("" if self._dir.v2 else "memory")
        if path is None:
            return False
        try:
            for line in _read(path / name).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def usage(self) -> tuple[float, int] | None:
        """(CPU seconds, working-set bytes: usage less inactive file pages, as cAdvisor), or None if unreadable."""
        try:
            if self._dir.v2:
                path = self._dir.dirs[""]
                stat = dict(line.split() for line in _read(path / "cpu.stat").splitlines())
                mem = dict(line.split() for line in _read(path / "memory.stat").splitlines())
                cpu = int(stat["usage_usec"]) / 1e6
                usage = int(_read(path / "memory.current"))
                return cpu, max(0, usage - int(mem.get("inactive_file", 0)))
            cpu = int(_read(self._dir.dirs["cpuacct"] / "cpuacct.usage")) / 1e9
            memdir = self._dir.dirs["memory"]
            mem = dict(line.split() for line in _read(memdir / "memory.stat").splitlines())
            usage = int(_read(memdir / "memory.usage_in_bytes"))
            return cpu, max(0, usage - int(mem.get("total_inactive_file", 0)))
        except (OSError, KeyError, ValueError):
            return None

    def remove(self) -> None:
        self._dir.remove()


class PodCgroup:
    """A Pod's cgroup under its QoS class; its containers' cgroups below it."""

    def __init__(self, node: NodeCgroups, uid: str, qos: str) -> None:
        self.node = node
        self.qos = qos
        parent = node.kubepods if qos == "Guaranteed" else node.kubepods.child(qos.lower())
        self._dir = parent.child(f"pod{uid}")

    def create(self, spec: Mapping[str, Any]) -> None:
        """Make the QoS and Pod cgroups with the Pod's summed CPU and memory settings."""
        self.node.ensure_qos()
        containers = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
        res = _pod_resources(containers) if self.qos != "BestEffort" else Resources()
        self._dir.make(_limits(res, self._dir.v2))

    def container(self, container_id: str) -> ContainerCgroup:
        return ContainerCgroup(self._dir.child(container_id))

    def create_container(self, container_id: str, spec: Mapping[str, Any], *, privileged: bool) -> ContainerCgroup:
        """Make the container's cgroup with its CPU, memory and (v1, not privileged) device settings."""
        cg = self.container(container_id)
        settings = _limits(container_resources(spec), self._dir.v2)
        if not self._dir.v2 and not privileged and "devices" in cg._dir.dirs:
            settings += [("devices", "devices.deny", "a"), *(("devices", "devices.allow", r) for r in _DEVICE_RULES)]
        cg._dir.make(settings)
        return cg

    def remove(self) -> None:
        self._dir.remove()


class NodeCgroups:
    """The node's cgroup root and its QoS cgroups (`kubepods`, `kubepods/burstable`, `kubepods/besteffort`)."""

    def __init__(self, root: _Dir, *, own_root: bool) -> None:
        self.root = root
        self.kubepods = root.child("kubepods")
        self._own_root = own_root  # the root directory is ours (a node's name), not the kubelet's own cgroup

    @property
    def v2(self) -> bool:
        return self.root.v2

    @classmethod
    def detect(cls, name: str, mount: Path = _MOUNT) -> NodeCgroups | None:
        """The node's cgroups below this process's own (`name`: a directory per node, "" for none); None when the
        cgroup file systems are not there or not writable (then limits cannot be honoured)."""
        try:
            own = _own_cgroups()
        except (OSError, ValueError):
            return None
        if (mount / "cgroup.controllers").exists():
            base = mount / own.get("", "/").lstrip("/")
            root = _Dir({"": base / name if name else base}, True)
        else:
            dirs = {
                ctrl: mount / ctrl / own.get(ctrl, "/").lstrip("/")
                for ctrl in _V1_CONTROLLERS
                if (mount / ctrl).is_dir()
            }
            if "cpu" not in dirs or "memory" not in dirs:
                return None
            root = _Dir({k: (p / name if name else p) for k, p in dirs.items()}, False)
        if not all(os.access(p.parent if name else p, os.W_OK) for p in root.dirs.values()):
            return None
        return cls(root, own_root=bool(name))

    def ensure_qos(self) -> None:
        """Make the node's QoS cgroups where missing: BestEffort gets the minimum CPU shares, as the kubelet sets it."""
        self.root.make()
        self.kubepods.make()
        self.kubepods.child("burstable").make()
        self.kubepods.child("besteffort").make(_limits(Resources(), self.v2))

    def prune(self) -> None:
        """Remove the QoS cgroups and the node's root once no Pod is left in them (a busy one stays)."""
        dirs = [self.kubepods.child("burstable"), self.kubepods.child("besteffort"), self.kubepods]
        for node in [*dirs, self.root] if self._own_root else dirs:
            for path in node.dirs.values():
                with contextlib.suppress(OSError):
                    path.rmdir()

    def remove_all(self) -> None:
        """Remove every Pod and container cgroup of the node and its QoS cgroups (reset, once their processes were
        killed: a PID namespace's last processes may take a moment to go); a cgroup still busy after that stays."""
        deadline = time.monotonic() + _REMOVE_WAIT
        while True:
            busy = False
            for path in self.kubepods.dirs.values():
                for dirpath, _, _ in sorted(os.walk(path), key=lambda w: -len(w[0])):  # deepest first
                    try:
                        os.rmdir(dirpath)
                    except OSError:
                        busy = True
            if not busy or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.prune()

    def pod(self, uid: str, qos: str) -> PodCgroup:
        return PodCgroup(self, uid, qos)
