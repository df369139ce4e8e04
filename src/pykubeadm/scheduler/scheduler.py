"""The scheduling loop of the built-in kube-scheduler: watch Pods and Nodes, bind each pending Pod through pods/binding.

A Pod that fits no Node gets `PodScheduled=False/Unschedulable` with kube-scheduler's "0/N nodes are available: …"
message and is retried with backoff and whenever a Node changes. Bound Pods are counted immediately (the "assumed" Pods
of kube-scheduler's cache) so a burst of Pods spreads over the Nodes.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from lightkube.resources.core_v1 import Node, Pod, PodBinding, PodStatus

from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.runtime import Controller, TemporaryError
from pykubeadm.scheduler.binder import choose_node, is_pending, unschedulable_message

__all__ = ["SchedulerController"]

log = logging.getLogger(__name__)


class SchedulerController(Controller):
    name = "scheduler"
    workers = 1  # one decision at a time keeps the "fewest Pods" count exact

    def setup(self) -> None:
        self.pods = self.watch(Pod, self._on_pod, namespace="*")
        self.nodes = self.watch(Node, self._on_node)
        self._assumed: dict[str, str] = {}  # pod key → node, until the informer shows the binding
        self._unschedulable: set[str] = set()

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        key = f"{obj.metadata.namespace}/{obj.metadata.name}"
        if event == "DELETED" or (obj.spec and obj.spec.nodeName):
            self._assumed.pop(key, None)
            self._unschedulable.discard(key)
            return
        self.queue.add(key)

    def _on_node(self, event: str, obj: Any, old: Any) -> None:
        for key in list(self._unschedulable):
            self.queue.add(key)

    def pods_per_node(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for pod in self.pods.items():
            spec, status = pod.spec, pod.status
            if spec and spec.nodeName and not (status and status.phase in ("Succeeded", "Failed")):
                counts[spec.nodeName] += 1
        for key, node in self._assumed.items():
            pod = self.pods.get(key)
            if pod is None or not (pod.spec and pod.spec.nodeName):
                counts[node] += 1
        return counts

    async def sync(self, key: Any) -> None:
        obj = self.pods.get(key)
        if obj is None or key in self._assumed:
            return
        pod = obj.to_dict()
        if not is_pending(pod):
            return
        nodes = [n.to_dict() for n in self.nodes.items()]
        node, reasons = choose_node(pod, nodes, self.pods_per_node())
        namespace, name = key.split("/", 1)
        if node is None:
            self._unschedulable.add(key)
            await self._mark_unschedulable(pod, unschedulable_message(len(nodes), reasons))
            raise TemporaryError(f"pod {key} is unschedulable")
        binding = PodBinding.from_dict(
            {
                "metadata": {"name": name, "namespace": namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            }
        )
        self._assumed[key] = node
        try:
            await self.client.create(binding, name, namespace=namespace)
        except ApiError as err:
            self._assumed.pop(key, None)
            if is_not_found(err):
                return
            if is_conflict(err):  # already bound by someone else
                return
            raise
        self._unschedulable.discard(key)
        log.info("bound pod %s to node %s", key, node)

    async def _mark_unschedulable(self, pod: dict[str, Any], message: str) -> None:
        status = pod.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        previous = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        if previous and previous.get("status") == "False" and previous.get("message") == message:
            return
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )
        status["conditions"] = conditions
        meta = pod["metadata"]
        try:
            await self.client.replace(PodStatus.from_dict(pod), meta["name"], namespace=meta["namespace"])
        except ApiError as err:
            log.debug("could not record PodScheduled=False on %s/%s: %s", meta["namespace"], meta["name"], err)
