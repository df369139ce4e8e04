"""The garbagecollector controller: kube's garbage collector over every kind the apiserver serves.

Discovery (each group's preferred version; kinds that can be listed, watched and deleted, events left out, refreshed
every 30 s) decides what is watched; one informer per kind (its cache stripped to metadata, as kube's metadata
informers hold) feeds the `Graph` of owners and dependents (graph.py). A dependent whose owners are all gone (absent, or present under another UID — owners missing from the graph are looked
up live before anything is deleted) is deleted in the background (or as its own finalizers say); an owner being deleted
with the `orphan` finalizer has its dependents' references to it removed and then the finalizer; one with
`foregroundDeletion` has its dependents deleted first (in the foreground when they have dependents of their own) and
loses the finalizer once no dependent blocking owner deletion is left. Work is keyed by UID.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Final

from lightkube.generic_resource import GenericGlobalResource, GenericNamespacedResource, create_api_info

from pykubeadm.client import ApiError, Informer, is_conflict, is_not_found, status_code
from pykubeadm.controllers.batchutil import ApiPath, Discovery, delete, discover, request
from pykubeadm.controllers.garbagecollector.graph import (
    FOREGROUND_FINALIZER,
    ORPHAN_FINALIZER,
    Graph,
    Node,
    OwnerState,
    decide,
)
from pykubeadm.controllers.runtime import Controller, TemporaryError, cancel_and_wait

__all__ = ["GarbageCollectorController", "collectable", "resource_type"]

log = logging.getLogger(__name__)

#: Kinds the collector never watches (kube's DefaultIgnoredResources).
IGNORED: Final = frozenset({("", "events"), ("events.k8s.io", "events")})
#: How often discovery is refreshed (kube's GC resync period).
DISCOVERY_PERIOD: Final = 30.0
#: How long the first sync waits for every kind's first list before it starts anyway.
SYNC_TIMEOUT: Final = 30.0


def collectable(path: ApiPath) -> bool:
    """A kind the collector watches: it can be listed, watched and deleted, and is not ignored."""
    return {"list", "watch", "delete"} <= path.verbs and (path.group, path.plural) not in IGNORED


def resource_type(path: ApiPath) -> type:
    """A lightkube generic resource class for a discovered kind (not registered globally, so typed models stay)."""
    base = GenericNamespacedResource if path.namespaced else GenericGlobalResource
    api_info = create_api_info(path.group, path.version, path.kind, path.plural)
    return type(path.kind, (base,), {"_api_info": api_info})


class GarbageCollectorController(Controller):
    name = "garbagecollector"
    service_account = "generic-garbage-collector"
    workers = 4

    def setup(self) -> None:
        self.graph = Graph()
        self.discovery = Discovery([], {})
        self._kinds: dict[ApiPath, tuple[Informer[Any], asyncio.Task[None]]] = {}

    # --- discovery and informers -----------------------------------------------------------------------------------

    async def _refresh(self) -> None:
        found = await discover(self.client)
        if found.failed:
            log.info("garbagecollector: discovery failed for %s", ", ".join(sorted(found.failed)))
        self.discovery = found
        wanted = {p for p in found.paths if collectable(p)}
        for path in wanted - set(self._kinds):
            informer: Informer[Any] = Informer(
                self.client, resource_type(path), namespace="*" if path.namespaced else None
            )

            def on_event(event: str, obj: Any, _old: Any, path: ApiPath = path) -> None:
                self._on_event(path, event, obj)

            informer.add_handler(on_event)
            self._kinds[path] = (informer, asyncio.create_task(informer.run(), name=f"gc-{path.plural}"))
        gone = [p for p in self._kinds if p not in wanted and p.api_version not in found.failed]
        for path in gone:
            _, task = self._kinds.pop(path)
            await cancel_and_wait([task])

    async def run(self) -> None:
        try:
            while True:
                try:
                    await self._refresh()
                    break
                except Exception as err:  # an API error, or the apiserver restarting (a transport error)
                    log.warning("garbagecollector: discovery failed: %s; retrying", err)
                    await asyncio.sleep(1.0)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(SYNC_TIMEOUT):
                    for informer, _ in list(self._kinds.values()):
                        await informer.synced.wait()
            await super().run()
        finally:
            await cancel_and_wait(task for _, task in self._kinds.values())

    async def background(self) -> None:
        while True:
            await asyncio.sleep(DISCOVERY_PERIOD)
            try:
                await self._refresh()
            except Exception as err:
                log.info("garbagecollector: discovery refresh failed: %s", err)

    # --- graph maintenance -----------------------------------------------------------------------------------------

    def _on_event(self, path: ApiPath, event: str, obj: Any) -> None:
        _keep_metadata_only(obj)
        node = Node.from_object(path, obj.to_dict())
        if not node.uid:
            return
        if event == "DELETED":
            self.graph.remove(node.uid)
            for dep in self.graph.dependents(node.uid):
                self.queue.add(dep.uid)
            self._wake_waiting_owners(node.owners)
            return
        prev = self.graph.upsert(node)
        if node.owners and (prev is None or prev.owners != node.owners):
            self.queue.add(node.uid)
        if prev is not None and prev.owners != node.owners:
            self._wake_waiting_owners(prev.owners)
        if node.deleting and (FOREGROUND_FINALIZER in node.finalizers or ORPHAN_FINALIZER in node.finalizers):
            self.queue.add(node.uid)
        if node.deleting_dependents and (prev is None or not prev.deleting_dependents):
            for dep in self.graph.dependents(node.uid):
                self.queue.add(dep.uid)

    def _wake_waiting_owners(self, refs: list[dict[str, Any]]) -> None:
        for ref in refs:
            owner = self.graph.nodes.get(str(ref.get("uid")))
            if owner is not None and owner.deleting_dependents:
                self.queue.add(owner.uid)

    # --- sync ------------------------------------------------------------------------------------------------------

    async def sync(self, key: Any) -> None:
        node = self.graph.nodes.get(key)
        if node is None:
            return
        if node.orphaning:
            await self._orphan_dependents(node)
            return
        if node.deleting_dependents:
            await self._delete_dependents_first(node)
            return
        if node.deleting or not node.owners:
            return
        states = [(ref, await self._owner_state(node, ref)) for ref in node.owners]
        decision = decide(node, states, bool(self.graph.dependents(node.uid)))
        if decision.remove_refs:
            log.info("garbagecollector: removing dangling owner references from %s %s", node.path.kind, _id(node))
            await self._patch_owner_refs(node, set(decision.remove_refs))
        elif decision.delete:
            log.info("garbagecollector: deleting %s %s (propagation %s)", node.path.kind, _id(node), decision.policy)
            await self._delete(node, decision.policy)

    async def _owner_state(self, node: Node, ref: dict[str, Any]) -> OwnerState:
        path = self.discovery.by_kind(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
        if path is None:
            raise TemporaryError(f"unable to get REST mapping for {ref.get('apiVersion')}/{ref.get('kind')}", 30.0)
        if path.namespaced and not node.path.namespaced:
            return OwnerState.DANGLING  # a cluster-scoped object cannot be owned by a namespaced one
        namespace = node.namespace if path.namespaced else ""
        owner = self.graph.nodes.get(str(ref.get("uid")))
        if owner is None or owner.name != ref.get("name") or owner.namespace != namespace:
            try:
                live = await request(self.client, "GET", path.url(namespace or None, str(ref.get("name"))))
            except ApiError as err:
                if is_not_found(err):
                    return OwnerState.DANGLING
                raise
            owner = Node.from_object(path, live)
            if owner.uid != ref.get("uid"):
                return OwnerState.DANGLING
        return OwnerState.WAITING if owner.deleting_dependents else OwnerState.SOLID

    async def _delete_dependents_first(self, owner: Node) -> None:
        blocking = self.graph.blocking_dependents(owner.uid)
        if not blocking:
            await self._remove_finalizer(owner, FOREGROUND_FINALIZER)
            return
        for dep in blocking:
            if not dep.deleting or dep.deleting_dependents:
                self.queue.add(dep.uid)

    async def _orphan_dependents(self, owner: Node) -> None:
        for dep in self.graph.dependents(owner.uid):
            await self._patch_owner_refs(dep, {owner.uid})
        await self._remove_finalizer(owner, ORPHAN_FINALIZER)

    # --- writes ----------------------------------------------------------------------------------------------------

    async def _merge_patch(self, node: Node, metadata: dict[str, Any]) -> None:
        body = {"metadata": {**metadata, "uid": node.uid, "resourceVersion": node.resource_version}}
        try:
            await request(
                self.client,
                "PATCH",
                node.path.url(node.namespace or None, node.name),
                body=body,
                content_type="application/merge-patch+json",
            )
        except ApiError as err:
            if is_not_found(err):
                return
            if is_conflict(err):
                raise TemporaryError(f"{_id(node)} changed meanwhile", 0.2) from err
            raise

    async def _patch_owner_refs(self, node: Node, remove: set[str]) -> None:
        kept = [ref for ref in node.owners if ref.get("uid") not in remove]
        if len(kept) == len(node.owners):
            return
        await self._merge_patch(node, {"ownerReferences": kept or None})

    async def _remove_finalizer(self, node: Node, finalizer: str) -> None:
        if finalizer not in node.finalizers:
            return
        kept = [f for f in node.finalizers if f != finalizer]
        await self._merge_patch(node, {"finalizers": kept or None})
        log.info("garbagecollector: removed the %s finalizer from %s %s", finalizer, node.path.kind, _id(node))

    async def _delete(self, node: Node, policy: str) -> None:
        try:
            await delete(self.client, node.path.url(node.namespace or None, node.name), uid=node.uid, policy=policy)
        except ApiError as err:
            if status_code(err) in (404, 409):
                return  # gone, or a new object of that name (the UID precondition failed)
            raise


def _keep_metadata_only(obj: Any) -> None:
    """Strip a cached object to its metadata (what kube's GC watches), so no Secret data or specs stay in memory."""
    if isinstance(obj, dict):
        for field in [k for k in obj if k not in ("apiVersion", "kind", "metadata")]:
            del obj[field]
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)


def _id(node: Node) -> str:
    return f"{node.namespace}/{node.name}" if node.namespace else node.name
