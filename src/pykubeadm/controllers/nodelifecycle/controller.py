"""The nodelifecycle controller: marks Nodes whose kubelet stopped heart-beating, and taints them by their Ready condition.

Every --node-monitor-period (5 s) each Node's last heartbeat is the later of (a) when this controller last *observed* its
kube-node-lease Lease change and (b) the Ready condition's lastHeartbeatTime. Past --node-monitor-grace-period
(40 s; 60 s node-startup grace for a Node that never posted status) its conditions become Unknown /
NodeStatusUnknown / "Kubelet stopped posting node status." Taints follow Ready: Unknown → node.kubernetes.io/unreachable,
False → node.kubernetes.io/not-ready (NoSchedule and NoExecute), True → neither. While a Node is not Ready, the Pods on
it get Ready=False (kube's MarkPodsNotReady, with a `NodeNotReady` "Node is not ready" warning on each Pod) and the
Node a `NodeNotReady` event when it stops being Ready. Evicting Pods from NoExecute-tainted Nodes is the separate
taint-eviction-controller (controllers/tainteviction/), as in kube ≥1.29.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Node, NodeStatus, Pod, PodStatus

from pykubeadm import constants as c
from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil_api import EventRecorder, model
from pykubeadm.controllers.runtime import Controller, TemporaryError
from pykubeadm.util.apitime import format_time, parse_time

__all__ = ["NodeLifecycleController", "desired_taints", "mark_pod_not_ready", "mark_unknown"]

log = logging.getLogger(__name__)

TAINT_UNREACHABLE: Final = "node.kubernetes.io/unreachable"
TAINT_NOT_READY: Final = "node.kubernetes.io/not-ready"
TAINT_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
_CONDITION_TYPES: Final = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


def mark_unknown(node: Mapping[str, Any], now: datetime, never_updated: bool) -> dict[str, Any] | None:
    """The Node with every condition Unknown (None if already so)."""
    reason, message = (
        ("NodeStatusNeverUpdated", "Kubelet never posted node status.")
        if never_updated
        else ("NodeStatusUnknown", "Kubelet stopped posting node status.")
    )
    new = copy.deepcopy(dict(node))
    status = new.setdefault("status", {})
    conditions = status.setdefault("conditions", [])
    by_type = {cond.get("type"): cond for cond in conditions}
    changed = False
    for cond_type in _CONDITION_TYPES:
        cond = by_type.get(cond_type)
        if cond is None:
            conditions.append(
                {
                    "type": cond_type,
                    "status": "Unknown",
                    "reason": reason,
                    "message": message,
                    "lastHeartbeatTime": (node.get("metadata") or {}).get("creationTimestamp") or format_time(now),
                    "lastTransitionTime": format_time(now),
                }
            )
            changed = True
        elif cond.get("status") != "Unknown":
            cond.update(status="Unknown", reason=reason, message=message, lastTransitionTime=format_time(now))
            changed = True
    return new if changed else None


def _ready_status(node: Mapping[str, Any]) -> str | None:
    conditions = (node.get("status") or {}).get("conditions") or []
    return next((cond.get("status") for cond in conditions if cond.get("type") == "Ready"), None)


def desired_taints(
    taints: list[dict[str, Any]], ready_status: str | None, now: datetime, unschedulable: bool = False
) -> list[dict[str, Any]] | None:
    """The Node's taints with unreachable/not-ready set to match Ready, and node.kubernetes.io/unschedulable:NoSchedule
    to match spec.unschedulable (a cordon), as kube's TaintNodesByCondition (None when unchanged)."""
    want_key = {"Unknown": TAINT_UNREACHABLE, "False": TAINT_NOT_READY}.get(ready_status or "")
    managed = (TAINT_UNREACHABLE, TAINT_NOT_READY)
    kept = [t for t in taints if t.get("key") not in managed or t.get("key") == want_key]
    kept = [t for t in kept if unschedulable or t.get("key") != TAINT_UNSCHEDULABLE]
    if unschedulable and not any(t.get("key") == TAINT_UNSCHEDULABLE for t in kept):
        kept.append({"key": TAINT_UNSCHEDULABLE, "effect": "NoSchedule"})
    if want_key is not None:
        for effect in ("NoSchedule", "NoExecute"):
            if not any(t.get("key") == want_key and t.get("effect") == effect for t in kept):
                taint = {"key": want_key, "effect": effect}
                if effect == "NoExecute":
                    taint["timeAdded"] = format_time(now)
                kept.append(taint)
    return None if kept == taints else kept


def mark_pod_not_ready(pod: Mapping[str, Any], now: datetime) -> dict[str, Any] | None:
    """The Pod with its Ready condition False (None when it has no Ready condition or it is not True)."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    if not any(cond.get("type") == "Ready" and cond.get("status") == "True" for cond in conditions):
        return None
    new = copy.deepcopy(dict(pod))
    for cond in new["status"]["conditions"]:
        if cond.get("type") == "Ready":
            cond.update(status="False", lastTransitionTime=format_time(now))
    return new


class NodeLifecycleController(Controller):
    name = "nodelifecycle"
    service_account = "node-controller"

    def setup(self) -> None:
        opts = self.ctx.options
        self.monitor_period = getattr(opts, "node_monitor_period", 5.0) if opts is not None else 5.0
        self.grace = getattr(opts, "node_monitor_grace_period", 40.0) if opts is not None else 40.0
        self.startup_grace = getattr(opts, "node_startup_grace_period", 60.0) if opts is not None else 60.0
        self._lease_seen: dict[str, float] = {}
        self.nodes = self.watch(Node, self._on_node)
        self.leases = self.watch(Lease, self._on_lease, namespace=c.NAMESPACE_NODE_LEASE)
        self.pods = self.watch(Pod, self._on_pod, namespace="*")
        self.recorder = EventRecorder(self.client, "node-controller")
        self._started = time.monotonic()

    def _on_node(self, event: str, obj: Any, old: Any) -> None:
        if event == "DELETED":
            self._lease_seen.pop(obj.metadata.name, None)
        else:
            self.queue.add(obj.metadata.name)

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        # a Pod (re)appearing on a Node that is not Ready is marked not ready too (kube's processPod)
        if event != "DELETED" and obj.spec is not None and obj.spec.nodeName:
            node = self.nodes.get(obj.spec.nodeName)
            if node is not None and _ready_status(node.to_dict()) != "True":
                self.queue.add(obj.spec.nodeName)

    def _on_lease(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED":
            self._lease_seen[obj.metadata.name] = time.monotonic()

    async def background(self) -> None:
        while True:
            await asyncio.sleep(self.monitor_period)
            for node in self.nodes.items():
                self.queue.add(node.metadata.name)

    def _stale(self, node: Mapping[str, Any]) -> tuple[bool, bool]:
        """(stale, never_updated) judged by local observation of the Lease and the Ready heartbeat."""
        name = node["metadata"]["name"]
        now_mono, now = time.monotonic(), datetime.now(UTC)
        conditions = (node.get("status") or {}).get("conditions") or []
        ready = next((cond for cond in conditions if cond.get("type") == "Ready"), None)
        ages = []
        if name in self._lease_seen:
            ages.append(now_mono - self._lease_seen[name])
        else:
            # no Lease change seen yet: count from our own start (a Lease seen at the first list counts as fresh)
            ages.append(now_mono - self._started)
        heartbeat = parse_time(ready.get("lastHeartbeatTime")) if ready else None
        if heartbeat is not None:
            ages.append((now - heartbeat).total_seconds())
        if ready is None:
            created = parse_time((node.get("metadata") or {}).get("creationTimestamp"))
            age = (now - created).total_seconds() if created else 0.0
            return min(ages) > self.startup_grace and age > self.startup_grace, True
        return min(ages) > self.grace, False

    async def sync(self, key: Any) -> None:
        obj = self.nodes.get(key)
        if obj is None:
            return
        node = obj.to_dict()
        now = datetime.now(UTC)
        stale, never = self._stale(node)
        if stale:
            updated = mark_unknown(node, now, never)
            if updated is not None:
                log.info("node %s stopped posting status; marking it Unknown", key)
                if _ready_status(node) == "True":
                    self.recorder.event(
                        node, "Normal", "NodeNotReady", f"Node {key} status is now: NodeNotReady", kind="Node"
                    )
                await self._write(model(NodeStatus, updated), key)
                return  # the informer brings the new object back; taints follow on the next sync
        ready = _ready_status(node)
        if ready in ("False", "Unknown"):
            await self._mark_pods_not_ready(key, now)
        spec = node.get("spec") or {}
        taints = desired_taints(list(spec.get("taints") or []), ready, now, bool(spec.get("unschedulable")))
        if taints is not None:
            node.setdefault("spec", {})["taints"] = taints
            await self._write(model(Node, node), None)

    async def _mark_pods_not_ready(self, node_name: str, now: datetime) -> None:
        """kube's MarkPodsNotReady: every Pod on the Node gets Ready=False and a NodeNotReady warning."""
        for obj in self.pods.items():
            if obj.spec is None or obj.spec.nodeName != node_name:
                continue
            updated = mark_pod_not_ready(obj.to_dict(), now)
            if updated is None:
                continue
            log.info("marking pod %s/%s on node %s not ready", obj.metadata.namespace, obj.metadata.name, node_name)
            try:
                await self.client.replace(
                    model(PodStatus, updated), obj.metadata.name, namespace=obj.metadata.namespace
                )
            except ApiError as err:
                if is_not_found(err):
                    continue
                if is_conflict(err):
                    raise TemporaryError("pod changed meanwhile") from err
                raise
            self.recorder.event(updated, "Warning", "NodeNotReady", "Node is not ready")

    async def _write(self, body: Any, status_of: str | None) -> None:
        try:
            if status_of is not None:
                await self.client.replace(body, status_of)
            else:
                await self.client.replace(body)
        except ApiError as err:
            if is_not_found(err):
                return
            if is_conflict(err):
                raise TemporaryError("node changed meanwhile") from err
            raise
