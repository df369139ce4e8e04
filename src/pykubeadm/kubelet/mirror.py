"""Mirror Pods: the API's view of this node's static Pods (`<namespace>/<name>-<node>`), with their live status.

A mirror Pod carries `kubernetes.io/config.mirror` (the config hash), `kubernetes.io/config.hash`,
`kubernetes.io/config.source: file` and exactly one controller ownerReference to the Node, as NodeRestriction demands.
A changed manifest (new hash) replaces the mirror Pod; a removed one deletes it. Status is written through
`pods/<name>/status` whenever the worker reports a change (coalesced) and at least every 10 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from typing import Any

from pykubeadm.kubelet.api import ApiError
from pykubeadm.kubelet.staticpods import StaticPod, StaticPodManager
from pykubeadm.util.apitime import now_micro_time

__all__ = ["MirrorPodSyncer", "mirror_pod"]

log = logging.getLogger(__name__)

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
HASH_ANNOTATION = "kubernetes.io/config.hash"
SOURCE_ANNOTATION = "kubernetes.io/config.source"
SEEN_ANNOTATION = "kubernetes.io/config.seen"


def mirror_pod(sp: StaticPod, node_name: str, node_uid: str) -> dict[str, Any]:
    """The mirror Pod object for a static Pod on `node_name`."""
    pod = copy.deepcopy(sp.pod)
    meta = pod.setdefault("metadata", {})
    meta["name"] = f"{meta['name']}-{node_name}"
    meta.pop("uid", None)
    meta.pop("resourceVersion", None)
    meta.pop("creationTimestamp", None)
    ann = dict(meta.get("annotations") or {})
    ann[MIRROR_ANNOTATION] = sp.hash
    ann[HASH_ANNOTATION] = sp.hash
    ann[SOURCE_ANNOTATION] = "file"
    ann[SEEN_ANNOTATION] = now_micro_time()
    meta["annotations"] = ann
    meta["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid, "controller": True}
    ]
    spec = pod.setdefault("spec", {})
    spec["nodeName"] = node_name
    pod.pop("status", None)
    return pod


class MirrorPodSyncer:
    """Keeps mirror Pods in the API in step with the StaticPodManager's workers."""

    def __init__(self, client: Any, manager: StaticPodManager, node_name: str, *, resync: float = 10.0):
        self.client = client
        self.manager = manager
        self.node_name = node_name
        self.resync = resync
        self.node_uid: str | None = None
        self._dirty = asyncio.Event()
        self._last_status: dict[str, Any] = {}
        self._known: dict[str, str] = {}  # mirror pod key → config hash it was created for

    def poke(self) -> None:
        self._dirty.set()

    def _path(self, namespace: str, name: str | None = None, sub: str = "") -> str:
        base = f"/api/v1/namespaces/{namespace}/pods"
        return f"{base}/{name}{'/' + sub if sub else ''}" if name else base

    async def sync_once(self) -> None:
        """Create, replace, delete and status-patch mirror Pods so they match the static Pods.

        Creation goes first (POST; on AlreadyExists the existing Pod is read, which the Node authorizer allows once it
        is bound to this node), so no list is needed; when the API lets the node list its Pods (field selector
        spec.nodeName) the list also finds stale mirror Pods left from before a restart.
        """
        if self.node_uid is None:
            return
        wanted: dict[str, tuple[str, StaticPod, Any]] = {}
        for sp, worker in list(self.manager.pods.values()):
            wanted[f"{worker.namespace}/{worker.full_name}"] = (worker.namespace, sp, worker)
        for key, (uid, mirror_hash) in (await self._list_mirrors()).items():
            want = wanted.get(key)
            if want is None or mirror_hash != want[1].hash:
                ns, name = key.split("/", 1)
                await self._delete(ns, name, uid)
                self._known.pop(key, None)
        for key in [k for k in self._known if k not in wanted]:
            ns, name = key.split("/", 1)
            await self._delete(ns, name, "")
            self._known.pop(key, None)
            self._last_status.pop(key, None)
        for key, (ns, sp, worker) in wanted.items():
            if self._known.get(key) != sp.hash:
                await self._ensure(ns, worker.full_name, sp)
                self._known[key] = sp.hash
                self._last_status.pop(key, None)
            status = worker.status()
            comparable = _comparable(status)
            if self._last_status.get(key) != comparable:
                await self.client.patch(self._path(ns, worker.full_name, "status"), {"status": status})
                self._last_status[key] = comparable

    async def _list_mirrors(self) -> dict[str, tuple[str, str]]:
        """namespace/name → (uid, config hash) of this node's mirror Pods; empty when listing is not allowed."""
        try:
            listing = await self.client.get("/api/v1/pods", params={"fieldSelector": f"spec.nodeName={self.node_name}"})
        except ApiError as e:
            if e.status == 403:
                return {}
            raise
        out = {}
        for pod in listing.get("items") or []:
            meta = pod.get("metadata") or {}
            ann = meta.get("annotations") or {}
            if MIRROR_ANNOTATION in ann:
                out[f"{meta.get('namespace')}/{meta.get('name')}"] = (meta.get("uid", ""), ann[MIRROR_ANNOTATION])
        return out

    async def _ensure(self, ns: str, name: str, sp: StaticPod) -> None:
        """Create the mirror Pod; if one exists for another config hash, delete it and create it again."""
        assert self.node_uid is not None
        obj = mirror_pod(sp, self.node_name, self.node_uid)
        for _ in range(3):
            try:
                await self.client.post(self._path(ns), obj)
                log.info("created mirror pod %s/%s", ns, name)
                return
            except ApiError as e:
                if e.status != 409:
                    raise
            existing = await self.client.get(self._path(ns, name))
            meta = existing.get("metadata") or {}
            if (meta.get("annotations") or {}).get(MIRROR_ANNOTATION) == sp.hash:
                return
            await self._delete(ns, name, meta.get("uid", ""))
            await self._wait_gone(ns, name)
        raise RuntimeError(f"could not replace mirror pod {ns}/{name}")

    async def _delete(self, ns: str, name: str, uid: str) -> None:
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            await self.client.delete(self._path(ns, name), body)
            log.info("deleted mirror pod %s/%s", ns, name)
        except ApiError as e:
            if e.status not in (404, 409):
                raise

    async def _wait_gone(self, ns: str, name: str) -> None:
        """Until GET says 404 (or 403: a node may not read a Pod that no longer exists)."""
        for _ in range(50):
            try:
                await self.client.get(self._path(ns, name))
            except ApiError as e:
                if e.status in (403, 404):
                    return
                raise
            await asyncio.sleep(0.1)

    async def run(self) -> None:
        while True:
            try:
                await self.sync_once()
            except Exception as e:
                log.info("mirror pod sync failed: %s", e)
                self._last_status.clear()
                self._known.clear()
            self._dirty.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._dirty.wait(), self.resync)
            await asyncio.sleep(0.2)  # coalesce bursts of changes


def _comparable(status: dict[str, Any]) -> Any:
    conds = [(x["type"], x["status"]) for x in status.get("conditions", [])]
    cts = [
        (
            c["name"],
            c["ready"],
            c["restartCount"],
            c["started"],
            sorted(c["state"].keys()),
            str(c["state"].get("waiting", {}).get("reason", "")),
            c.get("containerID"),
        )
        for c in status.get("containerStatuses", [])
    ]
    return (status.get("phase"), conds, cts)
