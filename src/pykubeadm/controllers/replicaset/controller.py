"""The replicaset controller (kube-controller-manager `replicaset`): keep `spec.replicas` active Pods per ReplicaSet.

Per sync, as kube's ReplicaSetController: claim the namespace's active Pods by selector (adopt orphans, release Pods
that stopped matching), and — once the expectations of the previous sync are met — create the missing Pods in slow-start
batches (1, 2, 4, …; at most 500 per sync) or delete the surplus in kube's deletion order. Status: replicas,
fullyLabeledReplicas, readyReplicas, availableReplicas (Ready for minReadySeconds), observedGeneration, and the
ReplicaFailure condition while creating or deleting fails.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from datetime import UTC, datetime
from typing import Any, Final

from lightkube.resources.apps_v1 import ReplicaSet, ReplicaSetStatus
from lightkube.resources.core_v1 import Pod

from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil import (
    BURST_REPLICAS,
    ControllerExpectations,
    active_pods_ranked,
    controller_of,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    new_controller_ref,
    pod_key,
    selector_matches,
    slow_start_batches,
)
from pykubeadm.controllers.controllerutil_api import EventRecorder, PodControl, api_error_message, claim, model
from pykubeadm.controllers.dictview import dict_view
from pykubeadm.controllers.runtime import Controller, TemporaryError
from pykubeadm.util.apitime import format_time

__all__ = ["ReplicaSetController", "calculate_status", "pods_to_delete"]

log = logging.getLogger(__name__)

KIND: Final = "ReplicaSet"
API_VERSION: Final = "apps/v1"


def pods_to_delete(
    pods: list[dict[str, Any]], related: list[dict[str, Any]], count: int, now: datetime | None = None
) -> list[dict[str, Any]]:
    """getPodsToDelete: the first `count` Pods in kube's deletion order (no ranking when all go)."""
    if count < len(pods):
        return active_pods_ranked(pods, related, now)[:count]
    return pods[:count]


def calculate_status(
    rs: dict[str, Any], pods: list[dict[str, Any]], manage_error: BaseException | None, now: datetime
) -> dict[str, Any]:
    """The ReplicaSet's new status (calculateStatus); observedGeneration is set when it is written."""
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    fully = ready = available = 0
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if all(labels.get(k) == v for k, v in template_labels.items()):
            fully += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
    conditions = [dict(c) for c in status.get("conditions") or []]
    failure = next((c for c in conditions if c.get("type") == "ReplicaFailure"), None)
    if manage_error is not None and failure is None:
        diff = len(pods) - int(spec.get("replicas", 1))
        conditions.append(
            {
                "type": "ReplicaFailure",
                "status": "True",
                "lastTransitionTime": format_time(now),
                "reason": "FailedCreate" if diff < 0 else "FailedDelete",
                "message": api_error_message(manage_error),
            }
        )
    elif manage_error is None and failure is not None:
        conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
    new: dict[str, Any] = {"replicas": len(pods)}
    for name, value in (("fullyLabeledReplicas", fully), ("readyReplicas", ready), ("availableReplicas", available)):
        if value:
            new[name] = value
    if status.get("observedGeneration"):
        new["observedGeneration"] = status["observedGeneration"]
    if conditions:
        new["conditions"] = conditions
    return new


class ReplicaSetController(Controller):
    name = "replicaset"
    service_account = "replicaset-controller"
    workers = 5  # --concurrent-replicaset-syncs

    def setup(self) -> None:
        self.expectations = ControllerExpectations()
        self.recorder = EventRecorder(self.client, "replicaset-controller")
        self.pod_control = PodControl(self.client, self.recorder, KIND, API_VERSION)
        self.rss = self.watch(ReplicaSet, self._on_rs, namespace="*")
        self.pods = self.watch(Pod, self._on_pod, namespace="*")
        self.pod_dicts = dict_view(self.pods)

    # --- event handlers ----------------------------------------------------------------------------------------------

    def _on_rs(self, event: str, obj: Any, old: Any) -> None:
        key = f"{obj.metadata.namespace}/{obj.metadata.name}"
        if event == "DELETED":
            self.expectations.delete(key)
        self.queue.add(key)

    def _resolve(self, namespace: str, ref: dict[str, Any] | None) -> str | None:
        if ref is None or ref.get("kind") != KIND:
            return None
        key = f"{namespace}/{ref.get('name')}"
        rs = self.rss.get(key)
        return key if rs is not None and rs.metadata.uid == ref.get("uid") else None

    def _matching_rss(self, pod: dict[str, Any]) -> list[str]:
        meta = pod.get("metadata") or {}
        keys = []
        for rs in self.rss.items():
            if rs.metadata.namespace != meta.get("namespace"):
                continue
            selector = rs.spec.selector.to_dict() if rs.spec and rs.spec.selector else None
            if selector_matches(selector, meta.get("labels")):
                keys.append(f"{rs.metadata.namespace}/{rs.metadata.name}")
        return keys

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        key = self._resolve(pod["metadata"].get("namespace"), controller_of(pod))
        if key is not None:
            self.expectations.deletion_observed(key, pod_key(pod))
            self.queue.add(key)

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        pod = obj.to_dict()
        namespace = pod["metadata"].get("namespace")
        if event == "DELETED":
            self._pod_deleted(pod)
            return
        if event == "ADDED":
            if pod["metadata"].get("deletionTimestamp"):
                self._pod_deleted(pod)
                return
            key = self._resolve(namespace, controller_of(pod))
            if key is not None:
                self.expectations.creation_observed(key)
                self.queue.add(key)
            elif controller_of(pod) is None:
                for k in self._matching_rss(pod):
                    self.queue.add(k)
            return
        old_pod = old.to_dict() if old is not None else {"metadata": {}}
        if old_pod["metadata"].get("resourceVersion") == pod["metadata"].get("resourceVersion"):
            return  # a resync
        labels_changed = old_pod["metadata"].get("labels") != pod["metadata"].get("labels")
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod)
            if labels_changed:
                self._pod_deleted(old_pod)
            return
        cur_ref, old_ref = controller_of(pod), controller_of(old_pod)
        if cur_ref != old_ref and old_ref is not None:
            old_key = self._resolve(namespace, old_ref)
            if old_key is not None:
                self.queue.add(old_key)
        if cur_ref is not None:
            key = self._resolve(namespace, cur_ref)
            if key is not None:
                self.queue.add(key)
                rs = self.rss.get(key)
                min_ready = int(rs.spec.minReadySeconds or 0) if rs is not None and rs.spec else 0
                if min_ready and not is_pod_ready(old_pod) and is_pod_ready(pod):
                    self.queue.add_after(key, min_ready + 1)
            return
        if labels_changed or cur_ref != old_ref:
            for k in self._matching_rss(pod):
                self.queue.add(k)

    # --- sync ----------------------------------------------------------------------------------------------------------

    async def sync(self, key: Any) -> None:
        obj = self.rss.get(key)
        if obj is None:
            self.expectations.delete(key)
            return
        rs = obj.to_dict()
        meta, spec = rs["metadata"], rs.get("spec") or {}
        needs_sync = self.expectations.satisfied(key) and not meta.get("deletionTimestamp")
        pods = self.pod_dicts.items(meta["namespace"])
        active = [p for p in pods if is_pod_active(p)]
        owned = await claim(
            self.client,
            Pod,
            rs,
            new_controller_ref(rs, API_VERSION, KIND),
            spec.get("selector"),
            active,
            lambda: self._still_there(rs),
        )
        manage_error: BaseException | None = None
        if needs_sync:
            try:
                await self._manage(key, rs, owned, pods)
            except Exception as err:
                manage_error = err
        now = datetime.now(UTC)
        status = await self._update_status(rs, calculate_status(rs, owned, manage_error, now))
        min_ready = int(spec.get("minReadySeconds") or 0)
        replicas = int(spec.get("replicas", 1))
        if (
            manage_error is None
            and min_ready > 0
            and status.get("readyReplicas", 0) == replicas
            and status.get("availableReplicas", 0) != replicas
        ):
            self.queue.add_after(key, min_ready)
        if manage_error is not None:
            raise manage_error

    async def _still_there(self, rs: dict[str, Any]) -> bool:
        meta = rs["metadata"]
        try:
            fresh = await self.client.get(ReplicaSet, meta["name"], namespace=meta["namespace"])
        except ApiError:
            return False
        fmeta = fresh.metadata
        return bool(fmeta is not None and fmeta.uid == meta.get("uid") and not fmeta.deletionTimestamp)

    async def _manage(
        self, key: str, rs: dict[str, Any], owned: list[dict[str, Any]], all_pods: list[dict[str, Any]]
    ) -> None:
        meta, spec = rs["metadata"], rs.get("spec") or {}
        diff = len(owned) - int(spec.get("replicas", 1))
        if diff < 0:
            count = min(-diff, BURST_REPLICAS)
            self.expectations.expect_creations(key, count)
            ref = new_controller_ref(rs, API_VERSION, KIND)
            template = spec.get("template") or {}
            created, error = 0, None
            for size in slow_start_batches(count):
                results = await asyncio.gather(
                    *(self.pod_control.create_pod(meta["namespace"], template, rs, ref) for _ in range(size)),
                    return_exceptions=True,
                )
                failures = [r for r in results if isinstance(r, BaseException)]
                for _ in failures:
                    self.expectations.creation_observed(key)
                created += size
                if failures:
                    error = failures[0]
                    skipped = count - created
                    if skipped > 0:
                        log.info("slow-start failure: skipping creation of %d pods for %s", skipped, key)
                        self.expectations.lower(key, add=skipped)
                    break
            if error is not None:
                raise error
        elif diff > 0:
            count = min(diff, BURST_REPLICAS)
            doomed = pods_to_delete(owned, self._related_pods(rs, all_pods), count, datetime.now(UTC))
            self.expectations.expect_deletions(key, [pod_key(p) for p in doomed])
            outcomes = await asyncio.gather(
                *(self.pod_control.delete_pod(meta["namespace"], p["metadata"]["name"], rs) for p in doomed),
                return_exceptions=True,
            )
            errors = []
            for pod, result in zip(doomed, outcomes, strict=True):
                if isinstance(result, BaseException):
                    self.expectations.deletion_observed(key, pod_key(pod))
                    if not is_not_found(result):
                        errors.append(result)
            if errors:
                raise errors[0]

    def _related_pods(self, rs: dict[str, Any], all_pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Pods of every ReplicaSet with the same controller (a Deployment's old and new ReplicaSets)."""
        owner = controller_of(rs)
        uids = {rs["metadata"].get("uid")}
        if owner is not None:
            for other in self.rss.items():
                ref = controller_of(other.to_dict())
                if (
                    other.metadata.namespace == rs["metadata"]["namespace"]
                    and ref
                    and ref.get("uid") == owner.get("uid")
                ):
                    uids.add(other.metadata.uid)
        return [p for p in all_pods if (controller_of(p) or {}).get("uid") in uids]

    async def _update_status(self, rs: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        meta = rs["metadata"]
        generation = meta.get("generation") or 0
        current = rs.get("status") or {}
        if _same_status(current, status) and current.get("observedGeneration", 0) == generation:
            return status
        body = copy.deepcopy(rs)
        for attempt in range(2):
            new_status = dict(status)
            if generation:
                new_status["observedGeneration"] = generation
            body["status"] = new_status
            try:
                await self.client.replace(model(ReplicaSetStatus, body), meta["name"], namespace=meta["namespace"])
                return new_status
            except ApiError as err:
                if is_not_found(err):
                    return status
                if not is_conflict(err) or attempt:
                    raise TemporaryError(f"updating status of {meta['namespace']}/{meta['name']}: {err}") from err
                fresh = await self.client.get(ReplicaSet, meta["name"], namespace=meta["namespace"])
                body = fresh.to_dict()
        return status


def _same_status(a: dict[str, Any], b: dict[str, Any]) -> bool:
    fields = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
    return all(a.get(f, 0) == b.get(f, 0) for f in fields) and (a.get("conditions") or []) == (
        b.get("conditions") or []
    )
