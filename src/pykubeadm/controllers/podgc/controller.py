"""The `podgc` controller: kube's pod garbage collector, every 20 s.

* terminated Pods (Succeeded/Failed) beyond --terminated-pod-gc-threshold (12500; 0 disables) are deleted, evicted
  ones first, then the oldest;
* terminating Pods on a Node that is not Ready and carries the `node.kubernetes.io/out-of-service` NoExecute taint are
  force-deleted;
* orphaned Pods, bound to a Node that does not exist, are marked Failed with the DisruptionTarget condition (reason
  `DeletionByPodGC`, "PodGC: node no longer exists") and force-deleted once the Node has still not appeared after a
  40 s quarantine;
* terminating Pods never scheduled (no nodeName) are force-deleted.

The selections are pure functions (unit-tested); `PodGCController` applies them. The 20 s period and 40 s quarantine
are constants in kube; PYKUBEADM_PODGC_PERIOD / PYKUBEADM_PODGC_QUARANTINE (seconds) shorten them for tests.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from lightkube.resources.core_v1 import Node, Pod, PodStatus

from pykubeadm.client import ApiError, is_not_found
from pykubeadm.controllers.controllerutil import is_pod_terminal
from pykubeadm.controllers.dictview import dict_view
from pykubeadm.controllers.runtime import Controller
from pykubeadm.util.apitime import now_time

__all__ = [
    "DEFAULT_TERMINATED_POD_GC_THRESHOLD",
    "PodGCController",
    "orphaned_pods",
    "out_of_service_terminating_pods",
    "terminated_pods_to_delete",
    "unscheduled_terminating_pods",
]

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]

DEFAULT_TERMINATED_POD_GC_THRESHOLD: Final = 12500
GC_CHECK_PERIOD: Final = 20.0
QUARANTINE_TIME: Final = 40.0
#: kube has no flags for these; tests shorten them through the environment
PERIOD_ENV: Final = "PYKUBEADM_PODGC_PERIOD"
QUARANTINE_ENV: Final = "PYKUBEADM_PODGC_QUARANTINE"
TAINT_OUT_OF_SERVICE: Final = "node.kubernetes.io/out-of-service"


def _env_seconds(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name) or default)
    except ValueError:
        return default


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def terminated_pods_to_delete(pods: Iterable[Obj], threshold: int) -> list[Obj]:
    """The terminated Pods over `threshold`: evicted first, then by creation time (kube's gcTerminated)."""
    if threshold <= 0:
        return []
    terminated = [p for p in pods if is_pod_terminal(p)]
    excess = len(terminated) - threshold
    if excess <= 0:
        return []

    def order(pod: Obj) -> tuple[int, str, str]:
        evicted = (pod.get("status") or {}).get("reason") == "Evicted"
        return (0 if evicted else 1, _meta(pod).get("creationTimestamp") or "", _meta(pod).get("name") or "")

    return sorted(terminated, key=order)[:excess]


def _node_ready(node: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )


def out_of_service_terminating_pods(pods: Iterable[Obj], nodes: Mapping[str, Obj]) -> list[Obj]:
    """Terminating Pods on not-Ready Nodes tainted out-of-service:NoExecute (kube's gcTerminating)."""
    out = []
    for pod in pods:
        node = nodes.get((pod.get("spec") or {}).get("nodeName") or "")
        if not _meta(pod).get("deletionTimestamp") or node is None or _node_ready(node):
            continue
        taints = (node.get("spec") or {}).get("taints") or []
        if any(t.get("key") == TAINT_OUT_OF_SERVICE and t.get("effect") == "NoExecute" for t in taints):
            out.append(pod)
    return out


def orphaned_pods(pods: Iterable[Obj], node_names: set[str]) -> list[Obj]:
    """Pods bound to a Node that is not in `node_names`."""
    return [p for p in pods if (p.get("spec") or {}).get("nodeName") and p["spec"]["nodeName"] not in node_names]


def unscheduled_terminating_pods(pods: Iterable[Obj]) -> list[Obj]:
    return [p for p in pods if _meta(p).get("deletionTimestamp") and not (p.get("spec") or {}).get("nodeName")]


class PodGCController(Controller):
    name = "podgc"
    service_account = "pod-garbage-collector"

    def setup(self) -> None:
        opts = self.ctx.options
        threshold = getattr(opts, "terminated_pod_gc_threshold", None)
        self.threshold = DEFAULT_TERMINATED_POD_GC_THRESHOLD if threshold is None else int(threshold)
        self.period = _env_seconds(PERIOD_ENV, GC_CHECK_PERIOD)
        self.quarantine = _env_seconds(QUARANTINE_ENV, QUARANTINE_TIME)
        self.pods = self.watch(Pod, lambda *_: None, namespace="*")
        self.pod_dicts = dict_view(self.pods)
        self.nodes = self.watch(Node, lambda *_: None)
        #: node name → when we first saw Pods bound to it while it did not exist
        self._missing_since: dict[str, float] = {}

    async def sync(self, key: Any) -> None:  # everything happens in background()
        return None

    async def background(self) -> None:
        while True:
            await asyncio.sleep(self.period)
            try:
                await self.gc()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                log.warning("podgc: %s", err)

    async def gc(self) -> None:
        pods = self.pod_dicts.items()
        nodes = {n.metadata.name: n.to_dict() for n in self.nodes.items()}
        for pod in terminated_pods_to_delete(pods, self.threshold):
            await self._force_delete(pod, None)
        for pod in out_of_service_terminating_pods(pods, nodes):
            await self._force_delete(pod, ("DeletionByPodGC", "PodGC: node is out-of-service"))
        await self._gc_orphaned(pods, set(nodes))
        for pod in unscheduled_terminating_pods(pods):
            await self._force_delete(pod, None)

    async def _gc_orphaned(self, pods: Sequence[Obj], node_names: set[str]) -> None:
        now = self.ctx.clock()
        orphans = orphaned_pods(pods, node_names)
        missing = {p["spec"]["nodeName"] for p in orphans}
        self._missing_since = {n: t for n, t in self._missing_since.items() if n in missing}
        for name in missing:
            self._missing_since.setdefault(name, now)
        for pod in orphans:
            node = pod["spec"]["nodeName"]
            if now - self._missing_since[node] < self.quarantine:
                continue
            if await self._node_exists(node):
                continue
            await self._force_delete(pod, ("DeletionByPodGC", "PodGC: node no longer exists"))

    async def _node_exists(self, name: str) -> bool:
        try:
            await self.client.get(Node, name)
        except ApiError as err:
            if is_not_found(err):
                return False
            raise
        return True

    async def _force_delete(self, pod: Obj, condition: tuple[str, str] | None) -> None:
        meta = _meta(pod)
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        log.info("PodGC is force deleting Pod: %s/%s", ns, name)
        try:
            if condition is not None and not is_pod_terminal(pod):
                await self._mark_failed(pod, *condition)
            await self.client.delete(Pod, name, namespace=ns, grace_period=0)
        except ApiError as err:
            if not is_not_found(err):
                log.warning("podgc: deleting pod %s/%s: %s", ns, name, err)

    async def _mark_failed(self, pod: Obj, reason: str, message: str) -> None:
        """Phase Failed plus the DisruptionTarget condition, as a strategic-merge patch of pods/status (the
        pod-garbage-collector role may patch, not update, it)."""
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": now_time(),
        }
        patch = {"status": {"phase": "Failed", "conditions": [condition]}}
        await self.client.patch(PodStatus, _meta(pod)["name"], patch, namespace=_meta(pod)["namespace"])
