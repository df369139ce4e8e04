"""The scheduler's cache of what runs where (kube-scheduler's NodeInfo): per Node its Pods and the resources they request.

Kept incrementally from the Pod and Node informers plus the scheduler's "assumed" Pods (bound by us, not yet seen
bound), so a decision costs O(nodes), not O(pods). Requests follow kube's computePodResourceRequest: the sum of the
containers' requests, the larger of that and any init container's, plus the Pod overhead; the "non-zero" requests used
for scoring count 100m CPU and 200Mi memory for a container that requests none (kube's DefaultMilliCPURequest and
DefaultMemoryRequest). CPU is in millicores, everything else in units.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pykubeadm.util.quantity import parse_quantity

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "NodeInfo",
    "PodInfo",
    "Resources",
    "node_allocatable",
    "pod_info",
    "pod_requests",
]

Obj = Mapping[str, Any]
Resources = dict[str, int]

#: what a container without a CPU request counts as when scoring (kube's schedutil.DefaultMilliCPURequest)
DEFAULT_MILLI_CPU_REQUEST: Final = 100
#: what a container without a memory request counts as when scoring (200 MB, schedutil.DefaultMemoryRequest)
DEFAULT_MEMORY_REQUEST: Final = 200 * 1024 * 1024


@functools.lru_cache(maxsize=4096)
def _amount(name: str, quantity: str) -> int:
    value = parse_quantity(str(quantity))
    return math.ceil(value * 1000) if name == "cpu" else math.ceil(value)


def _resources(raw: Obj | None) -> Resources:
    return {name: _amount(name, str(q)) for name, q in (raw or {}).items()}


def _add(into: Resources, more: Mapping[str, int]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0) + value


def pod_requests(pod: Obj, non_zero: bool = False) -> Resources:
    """What the Pod requests (computePodResourceRequest); `non_zero`: with the scoring defaults for unset cpu/memory."""
    spec = pod.get("spec") or {}
    total: Resources = {}
    for container in spec.get("containers") or []:
        req = _resources((container.get("resources") or {}).get("requests"))
        if non_zero:
            req.setdefault("cpu", DEFAULT_MILLI_CPU_REQUEST)
            req.setdefault("memory", DEFAULT_MEMORY_REQUEST)
        _add(total, req)
    for container in spec.get("initContainers") or []:
        req = _resources((container.get("resources") or {}).get("requests"))
        if container.get("restartPolicy") == "Always":  # a sidecar runs beside the containers
            _add(total, req)
            continue
        for name, value in req.items():
            total[name] = max(total.get(name, 0), value)
    _add(total, _resources(spec.get("overhead")))
    return total


def node_allocatable(node: Obj) -> Resources:
    status = node.get("status") or {}
    return _resources(status.get("allocatable") or status.get("capacity"))


@dataclass(frozen=True)
class PodInfo:
    """What the scheduler keeps of a Pod on a Node."""

    key: str
    namespace: str
    labels: Mapping[str, str]
    #: uid of the controlling owner (ReplicaSet, StatefulSet, …), for the default topology spreading
    owner_uid: str
    requests: Resources
    non_zero: Resources
    #: the Pod's required pod anti-affinity terms (checked against incoming Pods: symmetry)
    anti_affinity: tuple[Obj, ...] = ()


def pod_info(pod: Obj) -> PodInfo:
    meta = pod.get("metadata") or {}
    owner = next((r.get("uid") or "" for r in meta.get("ownerReferences") or [] if r.get("controller")), "")
    anti = ((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}
    return PodInfo(
        key=f"{meta.get('namespace')}/{meta.get('name')}",
        namespace=meta.get("namespace") or "",
        labels=dict(meta.get("labels") or {}),
        owner_uid=str(owner),
        requests=pod_requests(pod),
        non_zero=pod_requests(pod, non_zero=True),
        anti_affinity=tuple(anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ()),
    )


@dataclass
class NodeInfo:
    """One Node and the Pods on it, with their summed requests and a count per controlling owner."""

    node: Obj
    pods: dict[str, PodInfo] = field(default_factory=dict)
    requested: Resources = field(default_factory=dict)
    non_zero_requested: Resources = field(default_factory=dict)
    owners: Counter[str] = field(default_factory=Counter)

    @property
    def name(self) -> str:
        return str((self.node.get("metadata") or {}).get("name") or "")

    @property
    def labels(self) -> Mapping[str, str]:
        return (self.node.get("metadata") or {}).get("labels") or {}

    @functools.cached_property
    def allocatable(self) -> Resources:
        return node_allocatable(self.node)

    def add(self, info: PodInfo) -> None:
        if info.key in self.pods:
            self.remove(info.key)
        self.pods[info.key] = info
        _add(self.requested, info.requests)
        _add(self.non_zero_requested, info.non_zero)
        if info.owner_uid:
            self.owners[info.owner_uid] += 1

    def remove(self, key: str) -> None:
        info = self.pods.pop(key, None)
        if info is None:
            return
        _add(self.requested, {k: -v for k, v in info.requests.items()})
        _add(self.non_zero_requested, {k: -v for k, v in info.non_zero.items()})
        if info.owner_uid:
            self.owners[info.owner_uid] -= 1

    def with_pods(self, infos: Iterable[PodInfo]) -> NodeInfo:
        for info in infos:
            self.add(info)
        return self
