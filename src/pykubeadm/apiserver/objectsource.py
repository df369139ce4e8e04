"""`ObjectSource` over the registry stores, for authenticators, authorizers and admission plugins.

Hot resources (RBAC objects, Secrets, ServiceAccounts, Namespaces, Nodes, Pods, PriorityClasses) are served from watch-fed in-memory caches:
each cache lists once, then follows the store's watch from the list's revision. A cache miss on `get` falls back to a
live read, so an object created a moment ago is never reported missing. Other resources are read live.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from pykubeadm.apiserver.registry import Store
from pykubeadm.apiserver.selectors import FieldSelector, LabelSelector
from pykubeadm.storage import interface as si

__all__ = ["CACHED_RESOURCES", "StoreObjectSource"]

log = logging.getLogger("pykubeadm.apiserver.cache")
Obj = dict[str, Any]

CACHED_RESOURCES = (
    "clusterroles.rbac.authorization.k8s.io",
    "clusterrolebindings.rbac.authorization.k8s.io",
    "roles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    "secrets",
    "serviceaccounts",
    "namespaces",
    "nodes",
    "services",
    "pods",
    "priorityclasses.scheduling.k8s.io",
    "resourcequotas",  # ResourceQuota admission reads them on every namespaced create
    "limitranges",  # LimitRanger admission reads them on every pod create
    # admission webhooks read their configurations on every write; the watch applies changes at once
    "mutatingwebhookconfigurations.admissionregistration.k8s.io",
    "validatingwebhookconfigurations.admissionregistration.k8s.io",
    "validatingadmissionpolicies.admissionregistration.k8s.io",
    "validatingadmissionpolicybindings.admissionregistration.k8s.io",
)


class _Cache:
    def __init__(self, store: Store):
        self.store = store
        self.items: dict[tuple[str, str], Obj] = {}
        self.synced = asyncio.Event()
        self._ordered: list[tuple[tuple[str, str], Obj]] | None = None  # items by key; None after a change

    def ordered(self) -> list[tuple[tuple[str, str], Obj]]:
        """The items sorted by (namespace, name), re-sorted only after a change (authorizers list on every request)."""
        if self._ordered is None:
            self._ordered = sorted(self.items.items())
        return self._ordered

    def _key(self, obj: Obj) -> tuple[str, str]:
        meta = obj.get("metadata", {})
        return meta.get("namespace", ""), meta.get("name", "")

    async def run(self) -> None:
        while True:
            try:
                page = await self.store.list(None)
                self.items = {self._key(o): o for o in page.items}
                self._ordered = None
                self.synced.set()
                async for ev in self.store.watch(
                    None, int(page.resource_version) + 1, LabelSelector(), FieldSelector()
                ):
                    if ev.type == "DELETED":
                        self.items.pop(self._key(ev.object), None)
                    else:
                        self.items[self._key(ev.object)] = ev.object
                    self._ordered = None
            except asyncio.CancelledError:
                raise
            except (si.CompactedError, Exception):
                log.warning("cache of %s lost its watch; relisting", self.store.plural, exc_info=True)
                self.synced.clear()
                await asyncio.sleep(0.5)


class StoreObjectSource:
    """ObjectSource backed by registry stores, `by_resource` maps `plural[.group]` → Store."""

    def __init__(self, by_resource: dict[str, Store], cached: tuple[str, ...] = CACHED_RESOURCES):
        self._stores = by_resource
        self._caches = {r: _Cache(by_resource[r]) for r in cached if r in by_resource}
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self, timeout: float = 10.0) -> None:
        self._tasks = [asyncio.create_task(c.run(), name=f"cache-{r}") for r, c in self._caches.items()]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(c.synced.wait() for c in self._caches.values())), timeout)

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(BaseException):
                await t
        self._tasks = []

    def synced(self) -> bool:
        return all(c.synced.is_set() for c in self._caches.values())

    async def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        cache = self._caches.get(resource)
        if cache is not None and cache.synced.is_set():
            obj = cache.items.get((namespace, name))
            if obj is not None:
                return obj
        store = self._stores.get(resource)
        if store is None:
            return None
        return await store.try_get(namespace, name)

    async def list(self, resource: str, namespace: str | None = None) -> list[Obj]:
        cache = self._caches.get(resource)
        if cache is not None and cache.synced.is_set():
            return [o for (ns, _), o in cache.ordered() if namespace is None or ns == namespace]
        store = self._stores.get(resource)
        if store is None:
            return []
        return (await store.list(namespace)).items
