"""A container's CPU and memory as the kubelet turns them into runtime settings (kuberuntime's resource helpers):
requests and limits in millicores and bytes, CPU shares and the CFS quota. Used by both runtimes: the built-in one's
cgroups (`builtin.cgroups`) and the CRI one's LinuxContainerResources (`cri.podconfig`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pykubeadm.util.quantity import parse_quantity

__all__ = ["CFS_PERIOD_US", "Resources", "container_resources", "milli_cpu_to_quota", "milli_cpu_to_shares"]

#: The kubelet's CFS period (100 ms).
CFS_PERIOD_US = 100_000
_MIN_SHARES, _MAX_SHARES = 2, 262_144
_MIN_QUOTA_US = 1000


def milli_cpu_to_shares(milli: int) -> int:
    """kube's MilliCPUToShares: 1 CPU = 1024 shares, at least 2."""
    if milli <= 0:
        return _MIN_SHARES
    return max(_MIN_SHARES, min(_MAX_SHARES, milli * 1024 // 1000))


def milli_cpu_to_quota(milli: int) -> int:
    """kube's MilliCPUToQuota: the CFS quota (µs per `CFS_PERIOD_US`) of a CPU limit, at least 1 ms."""
    return max(_MIN_QUOTA_US, milli * CFS_PERIOD_US // 1000)


@dataclass(frozen=True)
class Resources:
    """A container's (or a Pod's summed) CPU request/limit in millicores and memory limit in bytes; None: not set."""

    cpu_request: int = 0
    cpu_limit: int | None = None
    memory_limit: int | None = None


def container_resources(container: Mapping[str, Any]) -> Resources:
    res = container.get("resources") or {}
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    cpu_limit = int(parse_quantity(str(lim["cpu"])) * 1000) if "cpu" in lim else None
    cpu_req = req.get("cpu")
    cpu_request = int(parse_quantity(str(cpu_req)) * 1000) if cpu_req is not None else (cpu_limit or 0)
    memory = int(parse_quantity(str(lim["memory"]))) if "memory" in lim else None
    return Resources(cpu_request, cpu_limit, memory)
