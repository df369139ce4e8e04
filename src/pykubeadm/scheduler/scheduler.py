"""The scheduling loop of the built-in kube-scheduler: watch Pods and Nodes, bind each pending Pod through pods/binding.

The cache (nodeinfo.NodeInfo per Node) follows the informers; a Pod we bind is "assumed" on its Node at once, as in
kube-scheduler's cache, so a burst of Pods spreads over the Nodes before the watch shows the bindings; the binding itself runs beside the
next decisions (kube's binding cycle), up to BIND_CONCURRENCY at once. A bound Pod gets
kube's `Scheduled` event ("Successfully assigned NS/POD to NODE"); a Pod that fits no Node gets
`PodScheduled=False/Unschedulable` and a `FailedScheduling` warning with kube-scheduler's "0/N nodes are available: …"
message, and is retried with back-off and whenever a Node changes or a bound Pod goes away.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from lightkube.resources.core_v1 import Node, PersistentVolume, PersistentVolumeClaim, Pod, PodBinding, PodStatus
from lightkube.resources.storage_v1 import StorageClass

from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil_api import EventRecorder, api_error_message, model
from pykubeadm.controllers.dictview import dict_view
from pykubeadm.controllers.runtime import Controller, TemporaryError
from pykubeadm.scheduler.binder import choose_node, is_pending, unschedulable_message
from pykubeadm.scheduler.metrics import SchedulerMetrics
from pykubeadm.scheduler.nodeinfo import NodeInfo, pod_info
from pykubeadm.scheduler.volumebinding import pre_filter
from pykubeadm.scheduler.volumeprebind import VolumePreBinder
from pykubeadm.util.apitime import now_time

__all__ = ["SCHEDULER_NAME", "SchedulerController"]

log = logging.getLogger(__name__)

#: the default profile's schedulerName, and the component its events come from
SCHEDULER_NAME = "default-scheduler"
#: bindings in flight at once (kube binds each Pod in its own goroutine)
BIND_CONCURRENCY = 32


class SchedulerController(Controller):
    name = "scheduler"
    workers = 1  # one decision at a time keeps the cache exact
    #: where attempts are counted (scheduler/metrics.py); set by the CLI
    metrics: SchedulerMetrics | None = None

    def setup(self) -> None:
        self.pods = self.watch(Pod, self._on_pod, namespace="*")
        self.nodes = self.watch(Node, self._on_node)
        self.recorder = EventRecorder(self.client, SCHEDULER_NAME)
        self.claims = dict_view(self.watch(PersistentVolumeClaim, self._on_storage, namespace="*"))
        self.volumes = dict_view(self.watch(PersistentVolume, self._on_storage))
        self.classes = dict_view(self.watch(StorageClass, self._on_storage))
        self.volume_binder = VolumePreBinder(self.client, self.claims)
        self._infos: dict[str, NodeInfo] = {}  # node name → NodeInfo (also for Nodes not (yet) in the informer)
        self._present: set[str] = set()  # Nodes the informer has
        self._placed: dict[str, str] = {}  # pod key → the node it counts on (bound or assumed)
        self._assumed: set[str] = set()  # pod keys bound by us, binding not yet seen
        self._unschedulable: set[str] = set()
        self._attempts: dict[str, int] = {}  # pod key → scheduling attempts so far
        self._binding: set[asyncio.Task[None]] = set()
        self._bind_slots = asyncio.Semaphore(BIND_CONCURRENCY)

    # --- cache -------------------------------------------------------------------------------------------------------

    def _info(self, node: str) -> NodeInfo:
        info = self._infos.get(node)
        if info is None:
            info = self._infos[node] = NodeInfo({"metadata": {"name": node}})
        return info

    def _unplace(self, key: str) -> None:
        node = self._placed.pop(key, None)
        if node is not None and node in self._infos:
            self._infos[node].remove(key)

    def _place(self, key: str, pod: dict[str, Any], node: str) -> None:
        self._unplace(key)
        self._info(node).add(pod_info(pod))
        self._placed[key] = node

    def _requeue_unschedulable(self) -> None:
        for key in list(self._unschedulable):
            self.queue.add(key)

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        key = f"{obj.metadata.namespace}/{obj.metadata.name}"
        node = obj.spec.nodeName if obj.spec else None
        terminal = bool(obj.status and obj.status.phase in ("Succeeded", "Failed"))
        if event == "DELETED":
            self._attempts.pop(key, None)
        if event == "DELETED" or (node and terminal):
            self._assumed.discard(key)
            self._unschedulable.discard(key)
            if key in self._placed:
                self._unplace(key)
                self._requeue_unschedulable()  # resources or anti-affinity freed
            return
        if node:
            self._assumed.discard(key)
            self._unschedulable.discard(key)
            if self._placed.get(key) != node or event == "ADDED" or _labels_changed(obj, old):
                self._place(key, obj.to_dict(), node)
            return
        if key not in self._assumed:
            self.queue.add(key)

    def _on_storage(self, event: str, obj: Any, old: Any) -> None:
        self._requeue_unschedulable()  # a claim bound, a volume or class appeared

    def _on_node(self, event: str, obj: Any, old: Any) -> None:
        name = obj.metadata.name
        if event == "DELETED":
            self._present.discard(name)
            info = self._infos.get(name)
            if info is not None and not info.pods:
                del self._infos[name]
            return
        fresh = NodeInfo(obj.to_dict()).with_pods(self._infos[name].pods.values() if name in self._infos else ())
        self._infos[name] = fresh
        self._present.add(name)
        self._requeue_unschedulable()

    def node_infos(self) -> list[NodeInfo]:
        return [self._infos[n] for n in sorted(self._present) if n in self._infos]

    def pending_counts(self) -> dict[str, int]:
        """Pending Pods by kube's queue names: active (queued), backoff (retry timer), unschedulable."""
        delayed = set(self.queue.delayed_keys())
        return {
            "active": len(self.queue),
            "backoff": len(delayed - self._unschedulable),
            "unschedulable": len(self._unschedulable),
        }

    # --- scheduling --------------------------------------------------------------------------------------------------

    async def sync(self, key: Any) -> None:
        obj = self.pods.get(key)
        if obj is None or key in self._assumed:
            return
        pod = obj.to_dict()
        if not is_pending(pod, SCHEDULER_NAME):
            return
        started = time.monotonic()
        self._attempts[key] = self._attempts.get(key, 0) + 1
        nodes = self.node_infos()
        namespace = pod["metadata"].get("namespace", "")
        pod_volumes, rejected = pre_filter(
            pod,
            lambda name: self.claims.get(f"{namespace}/{name}"),
            self.classes.get,
            self.volumes.get,
        )
        all_volumes = self.volumes.items()
        taken = self.volume_binder.is_assumed
        decision = choose_node(
            pod,
            nodes if pod_volumes is not None else [],
            None
            if pod_volumes is None or not (pod_volumes.bound or pod_volumes.unbound)
            else lambda node: pod_volumes.filter(node, all_volumes, taken),
        )
        if decision.node is None:
            self._unschedulable.add(key)
            never = (pod.get("spec") or {}).get("preemptionPolicy") == "Never"
            message = unschedulable_message(len(nodes), decision.failures, preemption_never=never, pre_filter=rejected)
            if self.metrics is not None:
                self.metrics.attempt("unschedulable", time.monotonic() - started)
            await self._mark_unschedulable(pod, message)
            raise TemporaryError(f"pod {key} is unschedulable: {message}")
        node = decision.node
        plan = None
        if pod_volumes is not None and pod_volumes.unbound:
            plan = pod_volumes.plan(self._info(node).node, all_volumes, taken)
            self.volume_binder.assume(plan or [])
        self._assumed.add(key)
        self._place(key, pod, node)
        task = asyncio.get_running_loop().create_task(self._bind(key, pod, node, started, plan))
        self._binding.add(task)
        task.add_done_callback(self._binding.discard)

    async def _bind(
        self, key: str, pod: dict[str, Any], node: str, started: float | None = None, plan: Any = None
    ) -> None:
        """kube-scheduler's binding cycle: runs beside the next decisions, the Pod assumed on its Node meanwhile.
        With unbound WaitForFirstConsumer claims, PreBind first binds them (VolumePreBinder) and waits."""
        namespace, name = key.split("/", 1)
        if plan:
            try:
                await self.volume_binder.pre_bind(plan, node)
            except Exception as err:
                self._assumed.discard(key)
                self._unplace(key)
                message = f'running PreBind plugin "VolumeBinding": {api_error_message(err)}'
                self.recorder.event(pod, "Warning", "FailedScheduling", message, kind="Pod", api_version="v1")
                self.queue.add_rate_limited(key)
                return
            finally:
                self.volume_binder.forget(plan)
        binding = model(
            PodBinding,
            {
                "metadata": {"name": name, "namespace": namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            },
        )
        async with self._bind_slots:
            try:
                await self.client.create(binding, name, namespace=namespace)
            except ValueError:
                pass  # bound: kube-apiserver answers a binding with a Status, which is not a Binding to decode
            except Exception as err:
                self._assumed.discard(key)
                self._unplace(key)
                if isinstance(err, ApiError) and (is_not_found(err) or is_conflict(err)):
                    return  # gone, or already bound by someone else
                if self.metrics is not None and started is not None:
                    self.metrics.attempt("error", time.monotonic() - started)
                log.warning("binding %s to %s failed: %s", key, node, err)
                self.recorder.event(pod, "Warning", "FailedScheduling", f"Binding rejected: {api_error_message(err)}",
                                    kind="Pod", api_version="v1")  # fmt: skip
                self.queue.add_rate_limited(key)
                return
        self._unschedulable.discard(key)
        if self.metrics is not None and started is not None:
            self.metrics.scheduled(time.monotonic() - started, self._attempts.pop(key, 1))
        self.recorder.event(
            pod, "Normal", "Scheduled", f"Successfully assigned {key} to {node}", kind="Pod", api_version="v1"
        )
        log.info("bound pod %s to node %s", key, node)

    async def _mark_unschedulable(self, pod: dict[str, Any], message: str) -> None:
        status = pod.setdefault("status", {})
        previous = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        self.recorder.event(pod, "Warning", "FailedScheduling", message, kind="Pod", api_version="v1")
        if previous and previous.get("status") == "False" and previous.get("message") == message:
            return
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": now_time(),
            }
        )
        status["conditions"] = conditions
        meta = pod["metadata"]
        try:
            await self.client.replace(model(PodStatus, pod), meta["name"], namespace=meta["namespace"])
        except ApiError as err:
            log.debug("could not record PodScheduled=False on %s/%s: %s", meta["namespace"], meta["name"], err)


def _labels_changed(obj: Any, old: Any) -> bool:
    return old is None or (obj.metadata.labels or {}) != (old.metadata.labels or {})
