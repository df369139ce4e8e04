"""The kubelet's Summary API: `GET /stats/summary` (stats.k8s.io/v1alpha1 `Summary`), and with
`?only_cpu_and_memory=true` the CPU and memory figures only (what the kubelet's GetCPUAndMemoryStats gives).

The figures come from one measurement shared with /metrics/resource (`resourcemetrics.measure`): the built-in
runtime's containers from their cgroups or process trees, CRI containers from the runtime's ListContainerStats (whose
memory detail and writable layer the Summary also shows); the node from /proc. As the kubelet does:
- `usageNanoCores` is the runtime's own where it gives one, else the rate between this and the previous request's
  `usageCoreNanoSeconds` (absent on the first: the CRI stats provider's cache);
- a container's `logs` are its log directory's use on the filesystem holding it, `rootfs` a CRI container's writable
  layer on the image filesystem; a Pod's `ephemeral-storage` is the sum of those;
- the node's `fs` is the filesystem of the kubelet's root directory, `runtime.imageFs` the runtime's image
  filesystem (ImageFsInfo + statfs, kubelet.fsstats), `network` its interfaces (/proc/net/dev), `rlimit` the PID limit
  and the number of processes, `systemContainers` the kubelet's own process and all Pods together ("kubelet",
  "pods").
A Pod is listed once it has a running container, named and dated as its status says (`podRef`, `startTime`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pykubeadm.kubelet.fsstats import fs_stats
from pykubeadm.kubelet.resourcemetrics import ContainerTarget, ContainerUsage, Scrape, measure
from pykubeadm.util.apitime import format_time

__all__ = ["SummaryProvider"]

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
#: The interface the kubelet names in the node's inline network stats (its network.DefaultInterfaceName).
_DEFAULT_INTERFACE = "eth0"


def _time(epoch: float) -> str:
    return format_time(dt.datetime.fromtimestamp(epoch, dt.UTC))


def _du(path: Path) -> tuple[int, int]:
    """(bytes used, inodes used) under `path`: allocated blocks as `du` counts them, and every file and directory."""
    total, inodes = 0, 0
    for root, _dirs, files in os.walk(path):
        inodes += 1  # the directory itself
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
                inodes += 1
            except OSError:
                continue
    return total, inodes


def _interfaces(proc: Path) -> list[dict[str, Any]]:
    """InterfaceStats of every interface but loopback, from /proc/net/dev."""
    out = []
    try:
        lines = (proc / "net" / "dev").read_text().splitlines()[2:]
    except OSError:
        return []
    for line in lines:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if name.strip() == "lo" or len(fields) < 11:
            continue
        out.append(
            {
                "name": name.strip(),
                "rxBytes": int(fields[0]),
                "rxErrors": int(fields[2]),
                "txBytes": int(fields[8]),
                "txErrors": int(fields[10]),
            }
        )
    return out


def _rlimit(proc: Path, now: str) -> dict[str, Any]:
    out: dict[str, Any] = {"time": now}
    try:
        out["maxpid"] = int((proc / "sys" / "kernel" / "pid_max").read_text())
        out["curproc"] = int((proc / "loadavg").read_text().split()[3].split("/")[1])
    except (OSError, ValueError, IndexError):
        pass
    return out


def _own_process(proc: Path, boot: float) -> tuple[float, int, float] | None:
    """(CPU seconds, resident bytes, start time) of this process: the kubelet's system container."""
    try:
        fields = (proc / "self" / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    cpu = sum(int(f) for f in fields[11:15]) / _TICKS
    return cpu, int(fields[21]) * _PAGE, boot + int(fields[19]) / _TICKS


class SummaryProvider:
    """Builds Summaries; keeps each series' previous CPU sample to give `usageNanoCores`.

    `targets()` are the running containers (built-in and CRI), `pods()` the node's Pods with status, `image_fs()` the
    runtime's image filesystem FsStats (None without a CRI runtime), `root_dir` the kubelet's root directory."""

    def __init__(
        self,
        node_name: str,
        *,
        targets: Callable[[], Awaitable[list[ContainerTarget]]],
        pods: Callable[[], list[dict[str, Any]]],
        image_fs: Callable[[], Awaitable[dict[str, Any] | None]],
        root_dir: Path,
        proc: Path = Path("/proc"),
    ) -> None:
        self.node_name = node_name
        self.targets = targets
        self.pods = pods
        self.image_fs = image_fs
        self.root_dir = root_dir
        self.proc = proc
        self._cpu: dict[tuple[str, ...], tuple[float, int]] = {}
        self._seen: set[tuple[str, ...]] = set()

    def _cpu_stats(self, key: tuple[str, ...], seconds: float, now: float, stamp: str, runtime_rate: Any = None) -> Any:
        ns = round(seconds * 1e9)
        out: dict[str, Any] = {"time": stamp, "usageCoreNanoSeconds": ns}
        if runtime_rate is not None:
            out["usageNanoCores"] = runtime_rate
        else:
            previous = self._cpu.get(key)
            if previous is not None and now > previous[0] and ns >= previous[1]:
                out["usageNanoCores"] = round((ns - previous[1]) / (now - previous[0]))
        self._cpu[key] = (now, ns)
        self._seen.add(key)
        return out

    async def summary(self, *, only_cpu_and_memory: bool = False) -> dict[str, Any]:
        targets = await self.targets()
        scrape = await asyncio.to_thread(measure, targets, self.proc)
        image_fs = None if only_cpu_and_memory else await self.image_fs()
        return await asyncio.to_thread(self._build, scrape, image_fs, only_cpu_and_memory)

    def _container(self, u: ContainerUsage, now: float, stamp: str, full: bool) -> tuple[dict[str, Any], int]:
        """A container's ContainerStats, and the ephemeral storage it uses (writable layer + logs)."""
        t, stats = u.target, u.target.stats
        rate = None
        if stats is not None and stats.cpu.HasField("usage_nano_cores") and stats.cpu.usage_nano_cores.value:
            rate = stats.cpu.usage_nano_cores.value
        cpu = self._cpu_stats(
            ("c", t.namespace, t.pod, t.container, str(u.start_time)), u.cpu_seconds, now, stamp, rate
        )
        memory: dict[str, Any] = {"time": stamp, "workingSetBytes": u.working_set}
        if stats is not None:
            m = stats.memory
            for key, field in (
                ("availableBytes", "available_bytes"),
                ("usageBytes", "usage_bytes"),
                ("rssBytes", "rss_bytes"),
                ("pageFaults", "page_faults"),
                ("majorPageFaults", "major_page_faults"),
            ):
                if m.HasField(field):
                    memory[key] = getattr(m, field).value
        else:
            memory.update(usageBytes=u.working_set, rssBytes=u.rss)
        out: dict[str, Any] = {"name": t.container, "startTime": _time(u.start_time), "cpu": cpu, "memory": memory}
        used = 0
        if full:
            layer = stats.writable_layer if stats is not None and stats.HasField("writable_layer") else None
            if layer is not None and layer.fs_id.mountpoint:
                try:
                    out["rootfs"] = fs_stats(
                        layer.fs_id.mountpoint,
                        used_bytes=layer.used_bytes.value,
                        inodes_used=layer.inodes_used.value,
                        time=stamp,
                    )
                    used += layer.used_bytes.value
                except OSError:
                    pass
            if t.log_path is not None and t.log_path.parent.is_dir():
                logs_used, logs_inodes = _du(t.log_path.parent)
                out["logs"] = fs_stats(t.log_path.parent, used_bytes=logs_used, inodes_used=logs_inodes, time=stamp)
                used += logs_used
        return out, used

    def _build(self, scrape: Scrape, image_fs: dict[str, Any] | None, only_cpu_and_memory: bool) -> dict[str, Any]:
        now = time.time()
        stamp = _time(now)
        full = not only_cpu_and_memory
        by_pod: dict[tuple[str, str], list[ContainerUsage]] = {}
        for u in scrape.containers:
            by_pod.setdefault((u.target.namespace, u.target.pod), []).append(u)
        pods = []
        pod_cpu_total, pod_memory_total = 0.0, 0
        for item in self.pods():
            meta = item.get("metadata") or {}
            usages = by_pod.get((meta.get("namespace") or "default", meta.get("name", "")))
            if not usages:
                continue
            containers, storage = [], 0
            for u in usages:
                stats, used = self._container(u, now, stamp, full)
                containers.append(stats)
                storage += used
            cpu_seconds = sum(u.cpu_seconds for u in usages)
            working_set = sum(u.working_set for u in usages)
            pod_cpu_total += cpu_seconds
            pod_memory_total += working_set
            uid = str(meta.get("uid", ""))
            pod: dict[str, Any] = {
                "podRef": {"name": meta.get("name", ""), "namespace": meta.get("namespace") or "default", "uid": uid},
                "startTime": (item.get("status") or {}).get("startTime") or containers[0]["startTime"],
                "containers": containers,
                "cpu": self._cpu_stats(("p", uid), cpu_seconds, now, stamp),
                "memory": {
                    "time": stamp,
                    "workingSetBytes": working_set,
                    "usageBytes": sum(int(c["memory"].get("usageBytes", 0)) for c in containers),
                    "rssBytes": sum(int(c["memory"].get("rssBytes", 0)) for c in containers),
                },
            }
            if full:
                pod["volume"] = []
                pod["ephemeral-storage"] = fs_stats(self.root_dir, used_bytes=storage, time=stamp)
            pods.append(pod)
        node = self._node(scrape, now, stamp, full, image_fs, pod_cpu_total, pod_memory_total)
        for gone in set(self._cpu) - self._seen:  # containers and Pods that are no more
            del self._cpu[gone]
        self._seen = set()
        return {"node": node, "pods": pods}

    def _node(
        self,
        scrape: Scrape,
        now: float,
        stamp: str,
        full: bool,
        image_fs: dict[str, Any] | None,
        pod_cpu: float,
        pod_memory: int,
    ) -> dict[str, Any]:
        node: dict[str, Any] = {"nodeName": self.node_name, "systemContainers": [], "startTime": _time(scrape.boot)}
        own = _own_process(self.proc, scrape.boot)
        if own is not None:
            node["systemContainers"].append(
                {
                    "name": "kubelet",
                    "startTime": _time(own[2]),
                    "cpu": self._cpu_stats(("s", "kubelet"), own[0], now, stamp),
                    "memory": {"time": stamp, "usageBytes": own[1], "workingSetBytes": own[1], "rssBytes": own[1]},
                }
            )
        node["systemContainers"].append(
            {
                "name": "pods",
                "startTime": _time(scrape.boot),
                "cpu": self._cpu_stats(("s", "pods"), pod_cpu, now, stamp),
                "memory": {"time": stamp, "usageBytes": pod_memory, "workingSetBytes": pod_memory},
            }
        )
        if scrape.node is not None:
            n = scrape.node
            node["cpu"] = self._cpu_stats(("n",), n.cpu_seconds, now, stamp)
            node["memory"] = {
                "time": stamp,
                "availableBytes": n.available,
                "usageBytes": n.usage,
                "workingSetBytes": n.working_set,
            }
            node["swap"] = {"time": stamp, "swapUsageBytes": n.swap}
        if not full:
            return node
        interfaces = _interfaces(self.proc)
        if interfaces:
            default = next((i for i in interfaces if i["name"] == _DEFAULT_INTERFACE), interfaces[0])
            node["network"] = {"time": stamp, **default, "interfaces": interfaces}
        with contextlib.suppress(OSError):
            node["fs"] = fs_stats(self.root_dir, time=stamp)
        if image_fs is not None:
            node["runtime"] = {"imageFs": image_fs, "containerFs": image_fs}
        node["rlimit"] = _rlimit(self.proc, stamp)
        return node
