"""The kubelet's event recorder: core/v1 Events about Pods (source component kubelet, host = node), sent in the
background; a repeat of the same (object, reason, message) bumps `count` and `lastTimestamp` as the event correlator
does. Used by the pod workers; `record` never blocks and never raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from pykubeadm.kubelet.api import ApiError
from pykubeadm.util.apitime import now_time

__all__ = ["EventRecorder"]

log = logging.getLogger(__name__)

_QUEUE_MAX = 1000


class EventRecorder:
    """Queue of events to post with the node's client (`client()` may be None before credentials exist)."""

    def __init__(self, client: Callable[[], Any], node_name: str) -> None:
        self._client = client
        self.node_name = node_name
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(_QUEUE_MAX)
        self._seen: dict[tuple[str, str, str, str], tuple[str, str, int]] = {}  # key → (namespace, name, count)

    def record(self, pod: Mapping[str, Any], kind: str, reason: str, message: str, field_path: str = "") -> None:
        """Queue an event on `pod` (type Normal or Warning); dropped when the queue is full."""
        meta = pod.get("metadata") or {}
        involved = {
            "kind": "Pod",
            "namespace": meta.get("namespace") or "default",
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
            "apiVersion": "v1",
        }
        if meta.get("resourceVersion"):
            involved["resourceVersion"] = meta["resourceVersion"]
        if field_path:
            involved["fieldPath"] = field_path
        log.info("event %s %s/%s %s: %s", kind, involved["namespace"], involved["name"], reason, message)
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait({"involved": involved, "type": kind, "reason": reason, "message": message})

    def record_node(self, kind: str, reason: str, message: str) -> None:
        """Queue an event on this kubelet's Node (involvedObject uid = the node name, as the kubelet's node events)."""
        involved = {"kind": "Node", "name": self.node_name, "uid": self.node_name, "apiVersion": "v1"}
        log.info("event %s node/%s %s: %s", kind, self.node_name, reason, message)
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(
                {"involved": involved, "namespace": "default", "type": kind, "reason": reason, "message": message}
            )

    async def run(self) -> None:
        while True:
            item = await self._queue.get()
            client = self._client()
            if client is None:
                continue
            try:
                await self._send(client, item)
            except Exception as e:  # events are best effort, as in the kubelet
                log.info("event %s for %s was not recorded: %s", item["reason"], item["involved"]["name"], e)

    async def _send(self, client: Any, item: dict[str, Any]) -> None:
        inv = item["involved"]
        ns = inv.get("namespace") or item.get("namespace") or "default"
        key = (inv.get("uid", ""), inv.get("fieldPath", ""), item["reason"], item["message"])
        ts = now_time()
        seen = self._seen.get(key)
        if seen is not None:
            _, name, count = seen
            try:
                await client.patch(
                    f"/api/v1/namespaces/{ns}/events/{name}", {"count": count + 1, "lastTimestamp": ts}, "merge"
                )
                self._seen[key] = (ns, name, count + 1)
                return
            except ApiError as e:
                if e.status != 404:
                    raise
        name = f"{inv['name']}.{time.time_ns():x}"
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": inv,
            "reason": item["reason"],
            "message": item["message"],
            "source": {"component": "kubelet", "host": self.node_name},
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
            "type": item["type"],
            "eventTime": None,
            "reportingComponent": "kubelet",
            "reportingInstance": self.node_name,
        }
        await client.post(f"/api/v1/namespaces/{ns}/events", event)
        if len(self._seen) > 4096:
            self._seen.clear()
        self._seen[key] = (ns, name, 1)
