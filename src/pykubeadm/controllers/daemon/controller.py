"""The daemonset controller (kube-controller-manager `daemonset`): one Pod of each DaemonSet on every eligible Node.

As kube's DaemonSetsController: a Node is eligible when the Pod template's nodeSelector and required node affinity
match it and every NoSchedule/NoExecute taint is tolerated (the template's tolerations plus the defaults kube adds to
daemon Pods); a Pod already running keeps running while only NoSchedule taints are untolerated. Pods are created through
the default scheduler: each carries a required node affinity `matchFields metadata.name In [<node>]`. Template
revisions are ControllerRevisions `<ds>-<hash>` (Pods labelled `controller-revision-hash`, history pruned to
revisionHistoryLimit); RollingUpdate replaces Pods within maxUnavailable (or surges within maxSurge), OnDelete waits.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any, Final

from lightkube.resources.apps_v1 import ControllerRevision, DaemonSet, DaemonSetStatus
from lightkube.resources.core_v1 import Node, Pod

from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil import (
    CONTROLLER_REVISION_HASH_LABEL,
    ControllerExpectations,
    controller_of,
    is_pod_available,
    is_pod_ready,
    is_pod_terminal,
    new_controller_ref,
    pod_key,
    selector_matches,
    slow_start_batches,
)
from pykubeadm.controllers.controllerutil_api import EventRecorder, PodControl, claim, model
from pykubeadm.controllers.controllerutil_history import current_revision, prune_revisions
from pykubeadm.controllers.daemon.util import (
    TEMPLATE_GENERATION_LABEL,
    add_daemon_tolerations,
    is_pod_updated,
    node_placement,
    node_should_run,
    pods_by_age,
    rolling_update_plan,
    target_node,
    template_generation,
    with_node_affinity,
)
from pykubeadm.controllers.runtime import Controller, TemporaryError

__all__ = ["DaemonSetController"]

log = logging.getLogger(__name__)

KIND: Final = "DaemonSet"
API_VERSION: Final = "apps/v1"
BURST_REPLICAS: Final = 250

Obj = dict[str, Any]


class DaemonSetController(Controller):
    name = "daemonset"
    service_account = "daemon-set-controller"
    workers = 2  # --concurrent-daemonset-syncs

    def setup(self) -> None:
        self.expectations = ControllerExpectations()
        self._failed_backoff: dict[tuple[str, str], tuple[float, float]] = {}
        self.recorder = EventRecorder(self.client, "daemonset-controller")
        self.pod_control = PodControl(self.client, self.recorder, KIND, API_VERSION)
        self.dss = self.watch(DaemonSet, self._on_ds, namespace="*")
        self.pods = self.watch(Pod, self._on_pod, namespace="*")
        self.nodes = self.watch(Node, self._on_node)
        self.revisions = self.watch(ControllerRevision, self._on_owned, namespace="*")

    def _on_ds(self, event: str, obj: Any, old: Any) -> None:
        key = f"{obj.metadata.namespace}/{obj.metadata.name}"
        if event == "DELETED":
            self.expectations.delete(key)
        self.queue.add(key)

    def _on_node(self, event: str, obj: Any, old: Any) -> None:
        if event == "MODIFIED" and old is not None and node_placement(obj) == node_placement(old):
            return  # heartbeats and other status changes do not move daemon Pods
        for ds in self.dss.items():
            self.queue.add(f"{ds.metadata.namespace}/{ds.metadata.name}")

    def _owner_key(self, namespace: str, ref: dict[str, Any] | None) -> str | None:
        if ref is None or ref.get("kind") != KIND:
            return None
        key = f"{namespace}/{ref.get('name')}"
        ds = self.dss.get(key)
        return key if ds is not None and ds.metadata.uid == ref.get("uid") else None

    def _on_owned(self, event: str, obj: Any, old: Any) -> None:
        item = obj.to_dict()
        key = self._owner_key(obj.metadata.namespace, controller_of(item))
        if key is not None:
            self.queue.add(key)
        elif controller_of(item) is None:
            for ds in self.dss.items():
                if ds.metadata.namespace == obj.metadata.namespace and selector_matches(
                    ds.spec.selector.to_dict() if ds.spec and ds.spec.selector else None, item["metadata"].get("labels")
                ):
                    self.queue.add(f"{ds.metadata.namespace}/{ds.metadata.name}")

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        pod = obj.to_dict()
        key = self._owner_key(obj.metadata.namespace, controller_of(pod))
        if key is not None:
            if event == "DELETED" or pod["metadata"].get("deletionTimestamp"):
                self.expectations.deletion_observed(key, pod_key(pod))
            elif event == "ADDED":
                self.expectations.creation_observed(key)
        self._on_owned(event, obj, old)

    # --- sync ----------------------------------------------------------------------------------------------------------

    async def sync(self, key: Any) -> None:
        obj = self.dss.get(key)
        if obj is None:
            self.expectations.delete(key)
            return
        ds = obj.to_dict()
        if ds["metadata"].get("deletionTimestamp"):
            return
        selector = (ds.get("spec") or {}).get("selector") or {}
        if not (selector.get("matchLabels") or selector.get("matchExpressions")):
            self.recorder.event(
                ds,
                "Warning",
                "SelectingAll",
                "This daemon set is selecting all pods. A non-empty selector is required.",
                kind=KIND,
                api_version=API_VERSION,
            )
            return
        nodes = [n.to_dict() for n in self.nodes.items()]
        hash_, old_revisions = await self._construct_history(ds)
        if not self.expectations.satisfied(key):
            await self._update_status(ds, nodes, hash_, False)
            return
        await self._manage(key, ds, nodes, hash_)
        if self.expectations.satisfied(key):
            strategy = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type", "RollingUpdate")
            if strategy == "RollingUpdate":
                await self._rolling_update(key, ds, nodes, hash_)
        await self._cleanup_history(ds, old_revisions)
        await self._update_status(ds, nodes, hash_, True)

    async def _node_pods(self, ds: Obj) -> dict[str, list[Obj]]:
        meta = ds["metadata"]
        pods = [p.to_dict() for p in self.pods.items() if p.metadata.namespace == meta["namespace"]]
        owned = await claim(
            self.client,
            Pod,
            ds,
            new_controller_ref(ds, API_VERSION, KIND),
            ds["spec"].get("selector"),
            pods,
            lambda: self._still_there(ds),
        )
        by_node: dict[str, list[Obj]] = defaultdict(list)
        for pod in owned:
            if is_pod_terminal(pod) and pod["metadata"].get("deletionTimestamp"):
                continue
            node = target_node(pod)
            if node is not None:
                by_node[node].append(pod)
        return dict(by_node)

    async def _still_there(self, ds: Obj) -> bool:
        meta = ds["metadata"]
        try:
            fresh = await self.client.get(DaemonSet, meta["name"], namespace=meta["namespace"])
        except ApiError:
            return False
        fmeta = fresh.metadata
        return bool(fmeta is not None and fmeta.uid == meta.get("uid") and not fmeta.deletionTimestamp)

    async def _manage(self, key: str, ds: Obj, nodes: list[Obj], hash_: str) -> None:
        node_pods = await self._node_pods(ds)
        allows_surge = self._max_surge_configured(ds)
        to_create: list[str] = []
        to_delete: list[str] = []
        for node in nodes:
            name = node["metadata"]["name"]
            should_run, should_continue = node_should_run(node, ds)
            pods = node_pods.get(name)
            if should_run and pods is None:
                to_create.append(name)
            elif should_continue and pods is not None:
                running = []
                for pod in pods:
                    if pod["metadata"].get("deletionTimestamp"):
                        continue
                    phase = (pod.get("status") or {}).get("phase")
                    if phase == "Failed" and self._in_backoff(key, name):
                        continue  # kube's failedPodsBackoff: do not fight a kubelet that keeps rejecting the Pod
                    if phase in ("Failed", "Succeeded"):
                        verb, reason, type_ = (
                            ("kill", "FailedDaemonPod", "Warning")
                            if phase == "Failed"
                            else ("delete", "SucceededDaemonPod", "Normal")
                        )
                        msg = f"Found {phase.lower()} daemon pod {pod['metadata']['namespace']}/{pod['metadata']['name']} on node {name}, will try to {verb} it"
                        self.recorder.event(ds, type_, reason, msg, kind=KIND, api_version=API_VERSION)
                        to_delete.append(pod["metadata"]["name"])
                    else:
                        running.append(pod)
                running = pods_by_age(running)
                if not allows_surge:
                    to_delete += [p["metadata"]["name"] for p in running[1:]]
                elif not running:
                    if should_run:
                        to_create.append(name)
                else:
                    to_delete += self._surge_excess(ds, running, hash_)
            elif not should_continue and pods is not None:
                to_delete += [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]
        known = {n["metadata"]["name"] for n in nodes}
        for node_name, pods in node_pods.items():
            if node_name not in known:
                to_delete += [p["metadata"]["name"] for p in pods if not (p.get("spec") or {}).get("nodeName")]
        await self._sync_nodes(key, ds, to_delete, to_create, hash_)

    def _in_backoff(self, key: str, node: str) -> bool:
        """Whether deleting a failed Pod on `node` waits (1 s, doubling up to 15 min); starts the next period if not."""
        now = time.monotonic()
        delay, until = self._failed_backoff.get((key, node), (0.0, 0.0))
        if now < until:
            self.queue.add_after(key, until - now)
            return True
        delay = min(max(1.0, delay * 2), 900.0)
        self._failed_backoff[(key, node)] = (delay, now + delay)
        return False

    @staticmethod
    def _max_surge_configured(ds: Obj) -> bool:
        us = (ds.get("spec") or {}).get("updateStrategy") or {}
        surge = (us.get("rollingUpdate") or {}).get("maxSurge")
        return us.get("type", "RollingUpdate") == "RollingUpdate" and surge not in (None, 0, "0", "0%")

    def _surge_excess(self, ds: Obj, running: list[Obj], hash_: str) -> list[str]:
        doomed, newest, oldest = [], None, None
        for pod in running:
            is_new = (pod["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) == hash_
            if is_new and newest is None:
                newest = pod
            elif not is_new and oldest is None:
                oldest = pod
            else:
                doomed.append(pod["metadata"]["name"])
        if newest is not None and oldest is not None:
            min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
            if not is_pod_ready(oldest) or is_pod_available(newest, min_ready, datetime.now(UTC)):
                doomed.append(oldest["metadata"]["name"])
        return doomed

    async def _sync_nodes(self, key: str, ds: Obj, to_delete: list[str], to_create: list[str], hash_: str) -> None:
        create_count, delete_count = min(len(to_create), BURST_REPLICAS), min(len(to_delete), BURST_REPLICAS)
        namespace = ds["metadata"]["namespace"]
        deleting = [f"{namespace}/{n}" for n in to_delete[:delete_count]]
        self.expectations.set(key, create_count, delete_count, deleting)
        template = copy.deepcopy(ds["spec"].get("template") or {})
        add_daemon_tolerations(template.setdefault("spec", {}))
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
        generation = template_generation(ds)
        if generation is not None:
            labels[TEMPLATE_GENERATION_LABEL] = generation
        ref = new_controller_ref(ds, API_VERSION, KIND)
        errors: list[BaseException] = []
        pos = 0

        async def create(node: str) -> Obj:
            pod_template = copy.deepcopy(template)
            with_node_affinity(pod_template["spec"], node)
            return await self.pod_control.create_pod(namespace, pod_template, ds, ref)

        for size in slow_start_batches(create_count):
            results = await asyncio.gather(*(create(n) for n in to_create[pos : pos + size]), return_exceptions=True)
            pos += size
            failures = [r for r in results if isinstance(r, BaseException)]
            for failure in failures:
                self.expectations.creation_observed(key)
                errors.append(failure)
            if failures and create_count - pos > 0:
                self.expectations.lower(key, add=create_count - pos)
                break
        outcomes = await asyncio.gather(
            *(self.pod_control.delete_pod(namespace, n, ds) for n in to_delete[:delete_count]), return_exceptions=True
        )
        for pk, result in zip(deleting, outcomes, strict=True):
            if isinstance(result, BaseException):
                self.expectations.deletion_observed(key, pk)
                if not is_not_found(result):
                    errors.append(result)
        if errors:
            raise errors[0]

    async def _rolling_update(self, key: str, ds: Obj, nodes: list[Obj], hash_: str) -> None:
        node_pods = await self._node_pods(ds)
        eligible = set()
        for node in nodes:
            if node_should_run(node, ds)[0]:
                eligible.add(node["metadata"]["name"])
                node_pods.setdefault(node["metadata"]["name"], [])
        to_delete, to_create = rolling_update_plan(ds, node_pods, len(eligible), hash_, datetime.now(UTC), eligible)
        if to_delete or to_create:
            await self._sync_nodes(key, ds, to_delete, to_create, hash_)

    # --- history -------------------------------------------------------------------------------------------------------

    async def _construct_history(self, ds: Obj) -> tuple[str, list[Obj]]:
        meta = ds["metadata"]
        items = [r.to_dict() for r in self.revisions.items() if r.metadata.namespace == meta["namespace"]]
        ref = new_controller_ref(ds, API_VERSION, KIND)
        revisions = await claim(
            self.client, ControllerRevision, ds, ref, ds["spec"].get("selector"), items, lambda: self._still_there(ds)
        )

        async def store_collision(count: int) -> None:
            ds.setdefault("status", {})["collisionCount"] = count
            await self.client.replace(model(DaemonSetStatus, ds), meta["name"], namespace=meta["namespace"])

        cur, old = await current_revision(self.client, ds, KIND, revisions, store_collision)
        labels = cur["metadata"].get("labels") or {}
        return str(labels.get(CONTROLLER_REVISION_HASH_LABEL) or cur["metadata"]["name"]), old

    async def _cleanup_history(self, ds: Obj, old: list[Obj]) -> None:
        limit = (ds.get("spec") or {}).get("revisionHistoryLimit")
        namespace = ds["metadata"]["namespace"]
        live = [
            (p.metadata.labels or {}).get(CONTROLLER_REVISION_HASH_LABEL)
            for p in self.pods.items()
            if p.metadata.namespace == namespace
        ]
        await prune_revisions(self.client, old, 10 if limit is None else int(limit), live)

    # --- status --------------------------------------------------------------------------------------------------------

    async def _update_status(self, ds: Obj, nodes: list[Obj], hash_: str, observe_generation: bool) -> None:
        node_pods = await self._node_pods(ds)
        now = datetime.now(UTC)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        counts = dict.fromkeys(
            (
                "desiredNumberScheduled",
                "currentNumberScheduled",
                "numberMisscheduled",
                "numberReady",
                "updatedNumberScheduled",
                "numberAvailable",
            ),
            0,
        )
        for node in nodes:
            should_run, _ = node_should_run(node, ds)
            pods = node_pods.get(node["metadata"]["name"]) or []
            if not should_run:
                counts["numberMisscheduled"] += 1 if pods else 0
                continue
            counts["desiredNumberScheduled"] += 1
            if not pods:
                continue
            counts["currentNumberScheduled"] += 1
            pod = pods_by_age(pods)[0]
            if is_pod_ready(pod):
                counts["numberReady"] += 1
                if is_pod_available(pod, min_ready, now):
                    counts["numberAvailable"] += 1
            if is_pod_updated(pod, hash_, template_generation(ds)):
                counts["updatedNumberScheduled"] += 1
        counts["numberUnavailable"] = counts["desiredNumberScheduled"] - counts["numberAvailable"]
        status = ds.get("status") or {}
        generation = int(ds["metadata"].get("generation") or 0)
        if (
            all(int(status.get(k) or 0) == v for k, v in counts.items())
            and int(status.get("observedGeneration") or 0) >= generation
        ):
            return
        body = copy.deepcopy(ds)
        for attempt in range(2):
            new_status = dict(body.get("status") or {})
            new_status.update(counts)
            if observe_generation:
                new_status["observedGeneration"] = generation
            body["status"] = new_status
            try:
                await self.client.replace(
                    model(DaemonSetStatus, body), ds["metadata"]["name"], namespace=ds["metadata"]["namespace"]
                )
                break
            except ApiError as err:
                if is_not_found(err):
                    return
                if not is_conflict(err) or attempt:
                    raise TemporaryError(f"updating status of daemon set {ds['metadata']['name']}: {err}") from err
                body = (
                    await self.client.get(DaemonSet, ds["metadata"]["name"], namespace=ds["metadata"]["namespace"])
                ).to_dict()
        if min_ready > 0 and counts["numberReady"] != counts["numberAvailable"]:
            self.queue.add_after(f"{ds['metadata']['namespace']}/{ds['metadata']['name']}", min_ready)
