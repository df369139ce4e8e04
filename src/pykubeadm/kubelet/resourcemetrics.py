"""The kubelet's /metrics/resource: CPU and memory of the node, each Pod and each container, from cgroups and /proc.

kube's resource metrics collector (pkg/kubelet/metrics/collectors/resource_metrics.go) with its names and labels:
node_cpu_usage_seconds_total, node_memory_working_set_bytes, node_swap_usage_bytes, container_cpu_usage_seconds_total
/ container_memory_working_set_bytes / container_start_time_seconds {container, namespace, pod},
pod_cpu_usage_seconds_total / pod_memory_working_set_bytes {namespace, pod}, resource_scrape_error and the older
scrape_error; every sample carries the time it was measured, as kube's do.

A container with a cgroup of its own (the built-in runtime's containment) is measured there, as cAdvisor does: the
cgroup's CPU usage and its memory usage less inactive file pages. Otherwise a container is its main process and every
descendant (and, for a sandboxed container, every process in its PID namespace: a program the lab's zygote forked into
it is not the launcher's descendant, kubelet.builtin.zygote): CPU time is their user + system time plus that of their reaped
children (what a cgroup's cpuacct counts), the working set their resident memory. The start time is the main
process's. One scrape lists /proc once and reads each process's `stat` once; the node comes from /proc/stat and
/proc/meminfo (working set = used memory less inactive file pages, as cAdvisor computes it for the root cgroup). A
process that exits during the scrape simply stops counting.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = [
    "ContainerTarget",
    "ContainerUsage",
    "NodeUsage",
    "ProcStat",
    "ResourceMetricsCollector",
    "Scrape",
    "container_targets",
    "container_trees",
    "measure",
    "read_processes",
    "render_resource_metrics",
]

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
_CONTAINER_LABELS = ("container", "namespace", "pod")
_POD_LABELS = ("namespace", "pod")


@dataclass(frozen=True)
class ContainerTarget:
    """A running container to measure: its labels, its main process and, where it has a cgroup, the reader of its
    (CPU seconds, working-set bytes) there."""

    container: str
    namespace: str
    pod: str
    pid: int
    cgroup_usage: Callable[[], tuple[float, int] | None] | None = None
    #: A CRI runtime's container, measured by the runtime (ListContainerStats): (CPU seconds, working-set bytes,
    #: start time in seconds since the epoch); no process tree is read for it.
    measured: tuple[float, int, float] | None = None
    #: The runtime's ContainerStats of a CRI container (memory detail, writable layer) for /stats/summary.
    stats: Any = None
    #: The container's current log file (/stats/summary's `logs`), where the worker knows it.
    log_path: Path | None = None


def _cgroup_reader(worker: Any, container_id: str) -> Callable[[], tuple[float, int] | None] | None:
    containment = getattr(worker, "containment", None)
    if containment is None or containment.cgroup is None:
        return None
    return lambda: containment.usage(container_id)


def _log_path(ct: Any) -> Path | None:
    log_path = getattr(ct, "log_path", None)
    return Path(log_path()) if callable(log_path) else None


def container_targets(workers: Iterable[Any]) -> list[ContainerTarget]:
    """The running containers (init containers too) of the kubelet's PodWorkers."""
    return [
        ContainerTarget(
            ct.name, w.namespace, w.full_name, ct.pid, _cgroup_reader(w, ct.container_id), log_path=_log_path(ct)
        )
        for w in workers
        for ct in w.all_containers()
        if ct.pid is not None
    ]


@dataclass(frozen=True)
class ProcStat:
    """What one read of /proc/<pid>/stat tells: parent, CPU ticks (own + reaped children), start tick, resident pages."""

    pid: int
    ppid: int
    cpu_ticks: int
    start_ticks: int
    rss_pages: int


def _parse_stat(pid: int, text: str) -> ProcStat | None:
    fields = text.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    # after the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14) ... starttime(19) ... rss(21)
    cpu = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    return ProcStat(pid, int(fields[1]), cpu, int(fields[19]), int(fields[21]))


def read_processes(proc: Path = Path("/proc")) -> dict[int, ProcStat]:
    """Every live process, from one read of each /proc/<pid>/stat."""
    out: dict[int, ProcStat] = {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(proc / entry / "stat", "rb") as f:
                text = f.read().decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        stat = _parse_stat(int(entry), text)
        if stat is not None:
            out[stat.pid] = stat
    return out


def _pid_ns(pid: int, proc: Path, which: str = "pid") -> str | None:
    try:
        return os.readlink(proc / str(pid) / "ns" / which)
    except OSError:
        return None


def container_trees(
    roots: Iterable[int], procs: dict[int, ProcStat], proc: Path = Path("/proc")
) -> dict[int, list[ProcStat]]:
    """Each root pid → its process and all its descendants (empty when the root is gone), and for a root whose children
    get a PID namespace of their own (the sandbox launcher), every other process in that namespace."""
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    out: dict[int, list[ProcStat]] = {}
    inner: dict[str, int] = {}  # the PID namespace a launcher made → its root
    for root in roots:
        tree: list[ProcStat] = []
        stack = [root] if root in procs else []
        while stack:
            pid = stack.pop()
            tree.append(procs[pid])
            stack.extend(children.get(pid, ()))
        out[root] = tree
        if tree:
            own, theirs = _pid_ns(root, proc), _pid_ns(root, proc, "pid_for_children")
            if own is not None and theirs is not None and theirs != own:
                inner[theirs] = root
    if inner:
        claimed = {p.pid for tree in out.values() for p in tree}
        for pid, stat in procs.items():
            owner = inner.get(_pid_ns(pid, proc) or "") if pid not in claimed else None
            if owner is not None:
                out[owner].append(stat)
    return out


def _node_cpu_seconds(proc: Path) -> float:
    """Busy CPU time of all CPUs: /proc/stat's first line less idle and iowait (guest time is already in user)."""
    with open(proc / "stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    busy = sum(values[:8]) - values[3] - (values[4] if len(values) > 4 else 0)
    return busy / _TICKS


def _meminfo(proc: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    with open(proc / "meminfo") as f:
        for line in f:
            name, _, rest = line.partition(":")
            parts = rest.split()
            if parts:
                out[name] = int(parts[0]) * (1024 if len(parts) > 1 else 1)
    return out


def _boot_time(proc: Path) -> float:
    with open(proc / "stat") as f:
        for line in f:
            if line.startswith("btime "):
                return float(line.split()[1])
    return time.time() - time.monotonic()


@dataclass(frozen=True)
class NodeUsage:
    """The node's figures: busy CPU seconds and memory working set / in use (total less free) / available / swap in
    use, in bytes."""

    cpu_seconds: float
    working_set: int
    usage: int
    available: int
    swap: int


@dataclass(frozen=True)
class ContainerUsage:
    """One running container's figures: CPU seconds, working set and resident bytes, start time (epoch seconds)."""

    target: ContainerTarget
    cpu_seconds: float
    working_set: int
    rss: int
    start_time: float


@dataclass(frozen=True)
class Scrape:
    """One measurement: the node (None when /proc could not tell), each running container, the boot time (epoch
    seconds), and whether anything could not be read (resource_scrape_error)."""

    node: NodeUsage | None
    containers: list[ContainerUsage]
    boot: float
    error: bool


def measure(targets: list[ContainerTarget], proc: Path = Path("/proc")) -> Scrape:
    """The node and each running container (those exited since their worker last looked are left out); blocking:
    reads /proc. Shared by /metrics/resource and /stats/summary (kubelet.statssummary)."""
    node: NodeUsage | None = None
    error = False
    try:
        mem = _meminfo(proc)
        used = mem["MemTotal"] - mem["MemFree"]
        node = NodeUsage(
            _node_cpu_seconds(proc),
            max(used - mem.get("Inactive(file)", 0), 0),
            used,
            mem.get("MemAvailable", mem["MemFree"]),
            mem.get("SwapTotal", 0) - mem.get("SwapFree", 0),
        )
        boot = _boot_time(proc)
    except (OSError, KeyError, ValueError, IndexError):
        error, boot = True, time.time() - time.monotonic()
    try:
        procs = read_processes(proc)
    except OSError:
        procs, error = {}, True
    trees = container_trees([t.pid for t in targets if t.measured is None], procs, proc)
    out: list[ContainerUsage] = []
    for t in targets:
        if t.measured is not None:
            cpu, working_set, started = t.measured
            out.append(ContainerUsage(t, cpu, working_set, working_set, started))
            continue
        tree = trees.get(t.pid) or []
        if not tree:
            continue  # exited since the worker last looked
        cpu = sum(p.cpu_ticks for p in tree) / _TICKS
        rss = working_set = sum(p.rss_pages for p in tree) * _PAGE
        measured = t.cgroup_usage() if t.cgroup_usage is not None else None
        if measured is not None:  # the container's cgroup counts what its processes counted, and what they left
            cpu, working_set = measured
        out.append(ContainerUsage(t, cpu, working_set, rss, boot + tree[0].start_ticks / _TICKS))
    return Scrape(node, out, boot, error)


class ResourceMetricsCollector(Collector):
    """Collects the resource metrics of the node and of `targets()` (the running containers) when scraped."""

    def __init__(self, targets: Callable[[], list[ContainerTarget]], proc: Path = Path("/proc")) -> None:
        self.targets = targets
        self.proc = proc

    def collect(self) -> Iterator[Metric]:
        now = time.time()
        node_cpu = CounterMetricFamily(
            "node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds"
        )
        node_mem = GaugeMetricFamily("node_memory_working_set_bytes", "Current working set of the node in bytes")
        node_swap = GaugeMetricFamily(
            "node_swap_usage_bytes", "Current swap usage of the node in bytes. Reported only on non-windows systems"
        )
        ct_cpu = CounterMetricFamily(
            "container_cpu_usage_seconds_total",
            "Cumulative cpu time consumed by the container in core-seconds",
            labels=_CONTAINER_LABELS,
        )
        ct_mem = GaugeMetricFamily(
            "container_memory_working_set_bytes",
            "Current working set of the container in bytes",
            labels=_CONTAINER_LABELS,
        )
        ct_start = GaugeMetricFamily(
            "container_start_time_seconds",
            "Start time of the container since unix epoch in seconds",
            labels=_CONTAINER_LABELS,
        )
        pod_cpu = CounterMetricFamily(
            "pod_cpu_usage_seconds_total", "Cumulative cpu time consumed by the pod in core-seconds", labels=_POD_LABELS
        )
        pod_mem = GaugeMetricFamily(
            "pod_memory_working_set_bytes", "Current working set of the pod in bytes", labels=_POD_LABELS
        )
        scrape = measure(self.targets(), self.proc)
        if scrape.node is not None:
            node_cpu.add_metric((), scrape.node.cpu_seconds, timestamp=now)
            node_mem.add_metric((), float(scrape.node.working_set), timestamp=now)
            node_swap.add_metric((), float(scrape.node.swap), timestamp=now)
        pods: dict[tuple[str, str], list[int]] = {}  # (namespace, pod) → [CPU ticks, resident pages]
        for u in scrape.containers:
            t = u.target
            labels = (t.container, t.namespace, t.pod)
            ct_cpu.add_metric(labels, u.cpu_seconds, timestamp=now)
            ct_mem.add_metric(labels, float(u.working_set), timestamp=now)
            ct_start.add_metric(labels, u.start_time, timestamp=now)
            totals = pods.setdefault((t.namespace, t.pod), [0, 0])
            totals[0] += round(u.cpu_seconds * _TICKS)
            totals[1] += u.working_set // _PAGE
        for (namespace, pod), (ticks, pages) in sorted(pods.items()):
            pod_cpu.add_metric((namespace, pod), ticks / _TICKS, timestamp=now)
            pod_mem.add_metric((namespace, pod), float(pages * _PAGE), timestamp=now)
        yield from (node_cpu, node_mem, node_swap, ct_cpu, ct_mem, ct_start, pod_cpu, pod_mem)
        for name in ("scrape_error", "resource_scrape_error"):
            family = GaugeMetricFamily(name, "1 if there was an error while getting container metrics, 0 otherwise")
            family.add_metric((), 1.0 if scrape.error else 0.0)
            yield family


def render_resource_metrics(targets: list[ContainerTarget], proc: Path = Path("/proc")) -> bytes:
    """The /metrics/resource body for these containers (blocking: reads /proc)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ResourceMetricsCollector(lambda: targets, proc))
    return generate_latest(registry)
