"""The API Pod source and manager: every Pod bound to this node (watch with `spec.nodeName=<node>`), admitted against
maxPods and hostPort conflicts, run by a PodWorker, its status written back, and deletion confirmed.

Called by `kubelet.Kubelet` once the node has credentials. As the real kubelet: a Pod beyond maxPods is rejected
(phase Failed, reason OutOfpods); a Pod with a deletionTimestamp is stopped gracefully (preStop, SIGTERM,
deletionGracePeriodSeconds, SIGKILL) and then deleted with gracePeriodSeconds=0 and a uid precondition, which is what
lets `kubectl delete` return. Status is written (merge patch of pods/<name>/status) only when a worker reports a change
and the status differs from the last one written, in coalesced batches. At start, the Pod directories of Pods the API
no longer has are cleaned up (their processes stopped, their CNI attachments deleted, as are cached attachments of
any other Pod that is gone); the others are adopted by their workers.

With a CRI runtime on the node (`runtime`), a Pod runs there or built-in as `runtimeroute.pod_runtime` says: a
`cri.podworker.CRIPodWorker` or a `builtin.podworker.PodWorker`, which offer the manager the same calls. Sandboxes of Pods
the API no longer has are stopped and removed through the runtime at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pykubeadm.cni import CNIError
from pykubeadm.cri.errors import CRIError
from pykubeadm.kubelet.api import ApiError
from pykubeadm.kubelet.builtin.podworker import PodWorker
from pykubeadm.kubelet.builtin.shim import ShimProcess
from pykubeadm.kubelet.cri.podconfig import POD_UID_LABEL
from pykubeadm.kubelet.cri.podworker import CRIPodWorker
from pykubeadm.kubelet.cri.relist import ContainerRelist
from pykubeadm.kubelet.listwatch import list_then_watch
from pykubeadm.kubelet.ports import NodePorts, host_port_conflict
from pykubeadm.kubelet.runtimeapi import KubeletRuntime
from pykubeadm.kubelet.runtimeroute import pod_runtime
from pykubeadm.layout import Layout

__all__ = ["PodManager"]

log = logging.getLogger(__name__)

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_COALESCE = 0.05
_PATCH_PARALLEL = 16
#: Seconds a ConfigMap or Secret read for a Pod is reused (the kubelet's TTL-based object managers: 1 min).
_OBJECT_TTL = 60.0

Worker = PodWorker | CRIPodWorker


class PodManager:
    """The node's API Pods: uid → PodWorker."""

    def __init__(
        self,
        client: Callable[[], Any],
        *,
        node_name: str,
        pod_ip: str,
        layout: Layout,
        events: Any,
        max_pods: int = 110,
        backoff_initial: float = 10.0,
        static_count: Callable[[], int] = lambda: 0,
        services: Any = None,
        cluster_dns: list[str] | None = None,
        cluster_domain: str = "",
        resolv_conf: Path | None = None,
        observer: Callable[[Any], None] | None = None,
        network: Any = None,
        runtime: KubeletRuntime | None = None,
    ) -> None:
        self.client = client
        self.node_name = node_name
        self.pod_ip = pod_ip
        self.layout = layout
        self.events = events
        self.max_pods = max_pods
        self.backoff_initial = backoff_initial
        self.static_count = static_count
        self.services = services
        self.cluster_dns = list(cluster_dns or [])
        self.cluster_domain = cluster_domain
        self.resolv_conf = resolv_conf
        self.observer = observer  # every worker's changes (the kubelet's metrics)
        self.network = network  # podnetwork.PodNetwork: the node's CNI network, None: Pods share the node's
        self.runtime = runtime  # the node's CRI runtime, None: every Pod runs built-in
        self.relist = ContainerRelist(runtime) if runtime is not None else None
        self.ports = NodePorts()
        self._object_cache: Any = None
        self.rejections: set[asyncio.Task[None]] = set()  # status writes of rejected Pods, in flight
        self.workers: dict[str, Worker] = {}
        self._terminating: dict[str, asyncio.Task[None]] = {}
        self._dirty: set[str] = set()
        self._wake = asyncio.Event()
        self._last_sent: dict[str, str] = {}
        self._cleaned = False
        self.synced = asyncio.Event()
        self._patch_slots = asyncio.Semaphore(_PATCH_PARALLEL)

    # --- lookups ----------------------------------------------------------------------------------------------------
    def find(self, namespace: str, name: str) -> Worker | None:
        for w in self.workers.values():
            if w.namespace == namespace and w.name == name:
                return w
        return None

    def active_count(self) -> int:
        return sum(1 for w in self.workers.values() if not w.finished())

    # --- source -----------------------------------------------------------------------------------------------------
    async def run(self) -> None:
        """List, then watch Pods bound to this node; relist after errors or an expired resourceVersion."""
        selector = f"spec.nodeName={self.node_name}"
        await asyncio.to_thread(self._prepare_runtime)
        if self.services is not None:  # containers get the Service variables: read the Services once first
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.services.synced.wait(), 10.0)
        await list_then_watch(
            self.client,
            "/api/v1/pods",
            self._on_list,
            self._on_event,
            field_selector=selector,
            what=f"pod watch for node {self.node_name}",
            log=log,
        )

    async def _on_list(self, pods: list[dict[str, Any]]) -> None:
        seen = set()
        for pod in pods:
            seen.add((pod.get("metadata") or {}).get("uid", ""))
            await self._upsert(pod)
        for uid in [u for u in self.workers if u not in seen]:
            await self._forget(uid)
        log.info("synced %d pods bound to node %s", len(seen), self.node_name)
        if not self._cleaned:
            self._cleaned = True
            await asyncio.to_thread(self._remove_orphans, seen)
            await self._remove_orphan_sandboxes(seen)
        self.synced.set()

    async def _on_event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            await self._forget((obj.get("metadata") or {}).get("uid", ""))
        else:
            await self._upsert(obj)

    def _objects(self) -> Any:
        """One ConfigMap/Secret cache for the node's Pods (TTL 1 min, the kubelet's default), when podenv has one."""
        if self._object_cache is None:
            try:
                from pykubeadm.kubelet.envvars import ObjectCache
            except ImportError:
                return None
            self._object_cache = ObjectCache(self.client(), ttl=_OBJECT_TTL)
        return self._object_cache

    def _prepare_runtime(self) -> None:
        """Build or find the native programs and decide isolation once, off the event loop, before any Pod."""
        try:
            from pykubeadm.kubelet.builtin import sandbox
        except ImportError:
            return
        try:
            sandbox.pause_path(self.layout)
            sandbox.cri_log_path(self.layout)
            if not sandbox.can_isolate(self.layout):
                log.warning(
                    "containers on node %s cannot be isolated (the kubelet is not root or mount/PID namespaces are "
                    "refused): they run as the kubelet's user on the node's file system, and Pods whose "
                    "securityContext or resource limits ask for confinement are refused (CreateContainerConfigError)",
                    self.node_name,
                )
        except Exception as e:
            log.warning("preparing the native pause and sandbox programs: %s", e)

    async def _upsert(self, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
            return
        uid = str(meta.get("uid") or "")
        if not uid:
            return
        worker = self.workers.get(uid)
        deleting = meta.get("deletionTimestamp") is not None
        if worker is None:
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed") and not self.layout.pod_dir(uid).exists():
                if deleting:
                    await self._final_delete(pod)
                return
            if deleting and not self.layout.pod_dir(uid).exists():
                await self._final_delete(pod)
                return
            if not self.layout.pod_dir(uid).exists() and not self._admit(pod):
                return
            worker = self._new_worker(pod, uid)
            self.workers[uid] = worker
            worker.start()
            self._changed(worker)
        else:
            worker.pod = pod
        if deleting and uid not in self._terminating:
            grace = meta.get("deletionGracePeriodSeconds")
            self._terminating[uid] = asyncio.ensure_future(
                self._terminate(worker, float(grace) if grace is not None else None)
            )

    def _new_worker(self, pod: dict[str, Any], uid: str) -> Worker:
        """The Pod's worker on the runtime that runs it (`runtimeroute.pod_runtime`)."""
        if self.runtime is not None and pod_runtime(pod.get("spec") or {}, cri=True) == "cri":
            return CRIPodWorker(
                pod,
                uid=uid,
                runtime=self.runtime,
                relist=self.relist,
                node_name=self.node_name,
                host_ip=self.pod_ip,
                layout=self.layout,
                on_change=self._changed,
                backoff_initial=self.backoff_initial,
                events=self.events,
                client=self.client,
                objects=self._objects(),
                service_env=self.services.env_for if self.services is not None else None,
                cluster_dns=self.cluster_dns,
                cluster_domain=self.cluster_domain,
                resolv_conf=self.resolv_conf,
                observer=self.observer,
            )
        return PodWorker(
            pod,
            uid=uid,
            node_name=self.node_name,
            pod_ip=self.pod_ip,
            layout=self.layout,
            on_change=self._changed,
            backoff_initial=self.backoff_initial,
            source="api",
            events=self.events,
            client=self.client,
            objects=self._objects(),
            service_env=self.services.env_for if self.services is not None else None,
            cluster_dns=self.cluster_dns,
            cluster_domain=self.cluster_domain,
            resolv_conf=self.resolv_conf,
            node_ports=self.ports,
            observer=self.observer,
            network=self.network,
        )

    def _admit(self, pod: dict[str, Any]) -> bool:
        """The kubelet's admission: a Pod beyond maxPods is rejected with OutOfpods, one asking for a hostPort another
        Pod of the node asks for with NodePorts."""
        used = self.active_count() + self.static_count()
        conflict = host_port_conflict(pod, [w.pod for w in self.workers.values() if not w.finished()])
        if used < self.max_pods and conflict is None:
            return True
        if conflict is not None:
            reason, message = "NodePorts", conflict
        else:
            reason = "OutOfpods"
            message = f"Node didn't have enough resource: pods, requested: 1, used: {used}, capacity: {self.max_pods}"
        self.events.record(pod, "Warning", reason, message)
        meta = pod["metadata"]
        status = {"phase": "Failed", "reason": reason, "message": f"Pod was rejected: {message}"}
        task = asyncio.ensure_future(self._patch(meta["namespace"], meta["name"], meta["uid"], status))
        self.rejections.add(task)
        task.add_done_callback(self.rejections.discard)
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
        return False

    async def _terminate(self, worker: Worker, grace: float | None) -> None:
        try:
            await worker.terminate(grace)
            await self._flush(worker.uid)
            await self._final_delete(worker.pod)
        except Exception as e:
            log.error("terminating pod %s: %s", worker.key, e)
        finally:
            self._terminating.pop(worker.uid, None)

    async def _final_delete(self, pod: dict[str, Any]) -> None:
        """DELETE with gracePeriodSeconds=0 and a uid precondition: the kubelet confirms the Pod is gone."""
        meta = pod.get("metadata") or {}
        body = {
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": meta.get("uid")},
        }
        try:
            await self.client().delete(f"/api/v1/namespaces/{meta.get('namespace')}/pods/{meta.get('name')}", body)
        except ApiError as e:
            if e.status not in (404, 409):
                raise

    async def _forget(self, uid: str) -> None:
        """The Pod is gone from the API: stop whatever still runs and remove its directories."""
        worker = self.workers.pop(uid, None)
        self._last_sent.pop(uid, None)
        if worker is None:
            return
        self.ports.release_pod(uid)
        task = self._terminating.get(uid)
        if task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(task)
        elif worker.has_running():
            await worker.terminate(min(worker.grace, 2.0))
        else:
            await worker.detach()
        await worker.release_network()
        await asyncio.to_thread(self._remove_dirs, worker)

    def _remove_dirs(self, worker: Worker) -> None:
        shutil.rmtree(worker.pod_dir, ignore_errors=True)
        shutil.rmtree(worker.log_dir, ignore_errors=True)

    def _remove_orphans(self, known: set[str]) -> None:
        """Pod directories of Pods the API does not have: stop their shims' processes, remove the directories."""
        root = self.layout.kubelet_pods_dir
        if not root.is_dir():
            return
        for pod_dir in root.iterdir():
            if pod_dir.name in known:
                continue
            for shim_dir in pod_dir.glob("containers/*/*"):
                proc = ShimProcess.adopt(shim_dir)
                if proc is not None and proc.running():
                    proc.kill_all()
            if self.network is not None:
                self._release_network(pod_dir.name)
            log.info("removing the directory of orphaned pod %s", pod_dir.name)
            shutil.rmtree(pod_dir, ignore_errors=True)
            for logs in self.layout.pod_log_dir.glob(f"*_{pod_dir.name}"):
                shutil.rmtree(logs, ignore_errors=True)
        if self.network is not None:  # attachments of Pods whose directory is gone as well
            self.network.collect(lambda uid: uid in known, self.layout.pod_dir)

    async def _remove_orphan_sandboxes(self, known: set[str]) -> None:
        """Sandboxes on the CRI runtime of Pods the API does not have: stopped and removed (their containers too)."""
        if self.runtime is None:
            return
        try:
            for sandbox in await self.runtime.list_pod_sandbox():
                uid = sandbox.labels.get(POD_UID_LABEL)
                if uid is None or uid in known:
                    continue
                log.info("removing the sandbox %s of orphaned pod %s", sandbox.id, uid)
                await self.runtime.stop_pod_sandbox(sandbox.id)
                await self.runtime.remove_pod_sandbox(sandbox.id)
        except CRIError as e:
            log.warning("removing the sandboxes of orphaned pods: %s", e)

    def _release_network(self, uid: str) -> None:
        try:
            self.network.detach(uid, self.layout.pod_dir(uid))
        except (CNIError, OSError) as e:  # the cache entry stays: collected again at the next start
            log.warning("releasing the network of orphaned pod %s: %s", uid, e)

    # --- status -----------------------------------------------------------------------------------------------------
    def _changed(self, worker: Worker) -> None:
        self._dirty.add(worker.uid)
        self._wake.set()

    async def status_loop(self) -> None:
        """Write changed statuses: woken by workers, coalesced, at most one PATCH per Pod and change."""
        while True:
            await self._wake.wait()
            await asyncio.sleep(_COALESCE)
            self._wake.clear()
            dirty, self._dirty = self._dirty, set()
            await asyncio.gather(*(self._flush_limited(uid) for uid in dirty), return_exceptions=True)

    async def _flush_limited(self, uid: str) -> None:
        async with self._patch_slots:
            await self._flush(uid)

    async def _flush(self, uid: str) -> None:
        worker = self.workers.get(uid)
        if worker is None:
            return
        status = worker.status()
        comparable = json.dumps(status, sort_keys=True)
        if self._last_sent.get(uid) == comparable:
            return
        try:
            await self._patch(worker.namespace, worker.name, uid, status)
            self._last_sent[uid] = comparable
        except ApiError as e:
            if e.status in (404, 409):
                return
            log.info("status of pod %s not written: %s", worker.key, e)
            self._dirty.add(uid)
            asyncio.get_running_loop().call_later(1.0, self._wake.set)
        except Exception as e:
            log.info("status of pod %s not written: %s", worker.key, e)
            self._dirty.add(uid)
            asyncio.get_running_loop().call_later(1.0, self._wake.set)

    async def _patch(self, namespace: str, name: str, uid: str, status: dict[str, Any]) -> None:
        body = {"metadata": {"uid": uid}, "status": status}
        await self.client().patch(f"/api/v1/namespaces/{namespace}/pods/{name}/status", body, "merge")

    async def detach_all(self) -> None:
        """The kubelet exits: stop watching, leave the containers running for the next kubelet to adopt."""
        for task in self._terminating.values():
            task.cancel()
        await asyncio.gather(*(w.detach() for w in self.workers.values()), return_exceptions=True)
