"""The `taint-eviction-controller` (kube ≥1.29 split it from node lifecycle): deletes Pods from NoExecute-tainted Nodes.

A Pod on a Node with a NoExecute taint it does not tolerate is deleted at once. When it tolerates every such taint, the
smallest `tolerationSeconds` of the matching tolerations decides: none set → it stays; otherwise it is deleted that many
seconds after the taints were added (the earliest `timeAdded`, else when this controller first saw them). Before deleting,
the Pod gets the `DisruptionTarget` condition (reason `DeletionByTaintManager`) and an event `TaintManagerEviction`
"Marking for deletion Pod NS/NAME"; a scheduled eviction that no longer applies records "Cancelling deletion of Pod
NS/NAME". `eviction_time` is the pure decision, with the clock passed in.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from lightkube.resources.core_v1 import Node, Pod, PodStatus

from pykubeadm.client import ApiError, delete_with_uid, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil_api import EventRecorder, model
from pykubeadm.controllers.runtime import Controller, TemporaryError
from pykubeadm.util.apitime import format_time, parse_time

__all__ = [
    "IMMEDIATELY",
    "NEVER",
    "TaintEvictionController",
    "eviction_time",
    "matching_tolerations",
    "min_toleration_seconds",
    "no_execute_taints",
    "tolerates",
]

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]

#: eviction_time's answer for a Pod that tolerates the taints forever
NEVER: Final = None
#: eviction_time's answer for a Pod that does not tolerate a taint: delete at once
IMMEDIATELY: Final = datetime.min.replace(tzinfo=UTC)


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """v1.Toleration.ToleratesTaint."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def matching_tolerations(taints: Iterable[Obj], tolerations: list[Obj]) -> tuple[bool, list[Obj]]:
    """v1helper.GetMatchingTolerations: (every taint tolerated, the first toleration matching each)."""
    matched: list[Obj] = []
    for taint in taints:
        found = next((t for t in tolerations if tolerates(t, taint)), None)
        if found is None:
            return False, []
        matched.append(found)
    return True, matched


def min_toleration_seconds(tolerations: list[Obj]) -> float:
    """kube's getMinTolerationTime: 0 with no tolerations or a non-positive value, -1 when none is bounded."""
    if not tolerations:
        return 0.0
    bounded = [t["tolerationSeconds"] for t in tolerations if t.get("tolerationSeconds") is not None]
    if not bounded:
        return -1.0
    return float(max(0, min(bounded)))


def no_execute_taints(node: Obj) -> list[Obj]:
    return [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]


def eviction_time(pod: Obj, taints: list[Obj], first_seen: datetime) -> datetime | None:
    """When to delete `pod` given its Node's NoExecute `taints` (None: never). A time ≤ now means at once."""
    if not taints:
        return NEVER
    ok, matched = matching_tolerations(taints, list((pod.get("spec") or {}).get("tolerations") or []))
    if not ok:
        return IMMEDIATELY
    seconds = min_toleration_seconds(matched)
    if seconds < 0:
        return NEVER
    added = [t for t in (parse_time(taint.get("timeAdded")) for taint in taints) if t is not None]
    start = min(added) if added else first_seen
    return start + timedelta(seconds=seconds)


class TaintEvictionController(Controller):
    """Deletes Pods that do not tolerate their Node's NoExecute taints (in time)."""

    name = "taint-eviction-controller"
    service_account = "taint-eviction-controller"
    workers = 2

    def setup(self) -> None:
        self.recorder = EventRecorder(self.client, "taint-eviction-controller")
        self.nodes = self.watch(Node, self._on_node)
        self.pods = self.watch(Pod, self._on_pod, namespace="*")
        #: node name → when we first saw its current NoExecute taints (fallback for a taint without timeAdded)
        self._first_seen: dict[str, datetime] = {}
        #: pod key → scheduled eviction time (to report cancellations)
        self._scheduled: dict[str, datetime] = {}
        #: UIDs of Pods we deleted (the informer may still show them undeleted for a moment) / announced
        self._evicted: set[str] = set()
        self._announced: set[str] = set()

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.ctx.clock(), UTC)

    def _on_node(self, event: str, obj: Any, old: Any) -> None:
        name = obj.metadata.name
        taints = no_execute_taints(obj.to_dict()) if event != "DELETED" else []
        if not taints:
            self._first_seen.pop(name, None)
        else:
            self._first_seen.setdefault(name, self._now())
        old_taints = no_execute_taints(old.to_dict()) if old is not None else []
        if event == "DELETED" or taints != old_taints:
            for pod in self.pods.items():
                if pod.spec is not None and pod.spec.nodeName == name:
                    self.queue.add(f"{pod.metadata.namespace}/{pod.metadata.name}")

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        key = f"{obj.metadata.namespace}/{obj.metadata.name}"
        if event == "DELETED":
            self._scheduled.pop(key, None)
            self._evicted.discard(obj.metadata.uid or "")
            self._announced.discard(obj.metadata.uid or "")
            return
        if obj.spec is not None and obj.spec.nodeName:
            self.queue.add(key)

    def _cancel(self, key: str, pod: Obj) -> None:
        if self._scheduled.pop(key, None) is not None:
            self.recorder.event(pod, "Normal", "TaintManagerEviction", f"Cancelling deletion of Pod {key}")

    async def sync(self, key: Any) -> None:
        obj = self.pods.get(key)
        if obj is None:
            self._scheduled.pop(key, None)
            return
        pod = obj.to_dict()
        if pod["metadata"].get("deletionTimestamp") or pod["metadata"].get("uid") in self._evicted:
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        node_obj = self.nodes.get(node_name) if node_name else None
        taints = no_execute_taints(node_obj.to_dict()) if node_obj is not None else []
        now = self._now()
        when = eviction_time(pod, taints, self._first_seen.get(node_name or "", now))
        if when is None:
            self._cancel(key, pod)
            return
        if when > now:
            self._scheduled[key] = when
            self.queue.add_after(key, (when - now).total_seconds())
            return
        self._scheduled.pop(key, None)
        uid = pod["metadata"].get("uid", "")
        if uid not in self._announced:
            self._announced.add(uid)
            self.recorder.event(pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {key}")
        await self._mark_disruption_target(pod, now)
        try:
            await delete_with_uid(
                self.client,
                Pod,
                pod["metadata"]["name"],
                pod["metadata"].get("uid", ""),
                namespace=pod["metadata"]["namespace"],
            )
        except ApiError as err:
            if is_not_found(err) or is_conflict(err):
                return
            raise
        self._evicted.add(uid)

    async def _mark_disruption_target(self, pod: Obj, now: datetime) -> None:
        """Add DisruptionTarget=True (DeletionByTaintManager) to the Pod's status, as kube does before deleting."""
        body = copy.deepcopy(dict(pod))
        conditions = [
            c for c in (body.get("status") or {}).get("conditions") or [] if c.get("type") != "DisruptionTarget"
        ]
        conditions.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "DeletionByTaintManager",
                "message": "Taint manager: deleting due to NoExecute taint",
                "lastTransitionTime": format_time(now),
            }
        )
        body.setdefault("status", {})["conditions"] = conditions
        meta = body["metadata"]
        try:
            await self.client.replace(model(PodStatus, body), meta["name"], namespace=meta["namespace"])
        except ApiError as err:
            if is_not_found(err):
                return
            if is_conflict(err):
                raise TemporaryError("pod changed meanwhile") from err
            log.info("could not mark pod %s/%s as a disruption target: %s", meta["namespace"], meta["name"], err)
