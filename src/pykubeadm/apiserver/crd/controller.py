"""The CRD controller, started by server.py: follows the CustomResourceDefinition store and serves each CRD's versions
(a registry Store per served version in the apiserver's state, so routing, discovery, OpenAPI and watches see them),
sets the NamesAccepted and Established conditions and acceptedNames, registers a Local APIService per custom group
version (kube-aggregator's crdRegistrationController), and on deletion removes every custom object before dropping the
`customresourcecleanup.apiextensions.k8s.io` finalizer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.admission.webhook.caller import WebhookClient
from pykubeadm.apiserver.aggregator.apiservice import AUTOMANAGED_LABEL, apiservice_name
from pykubeadm.apiserver.crd.conversion import Converter, ConvertingStore, StoreSource
from pykubeadm.apiserver.crd.strategy import CLEANUP_FINALIZER, CustomResourceStrategy, storage_version
from pykubeadm.apiserver.printing import now_rfc3339
from pykubeadm.apiserver.registry import Store
from pykubeadm.apiserver.registry.base import Obj, RequestContext
from pykubeadm.apiserver.selectors import FieldSelector, LabelSelector

__all__ = ["CRD_RESOURCE", "CRDController"]

log = logging.getLogger("pykubeadm.apiserver.crd")
CRD_RESOURCE = "customresourcedefinitions.apiextensions.k8s.io"
_CTX = RequestContext()
_APISERVICES = "apiservices.apiregistration.k8s.io"


def _condition(type_: str, reason: str, message: str) -> Obj:
    return {"type": type_, "status": "True", "lastTransitionTime": now_rfc3339(), "reason": reason, "message": message}


class CRDController:
    def __init__(self, state: Any) -> None:
        self.state = state
        #: CRD name → the (group, version, plural) keys it serves.
        self.served: dict[str, list[tuple[str, str, str]]] = {}
        self._lock = asyncio.Lock()
        self._webhooks: WebhookClient | None = None

    @property
    def store(self) -> Store:
        return self.state.store(CRD_RESOURCE)

    async def run(self) -> None:
        while True:
            try:
                page = await self.store.list(None)
                for crd in page.items:
                    await self.sync(crd)
                async for ev in self.store.watch(
                    None, int(page.resource_version) + 1, LabelSelector(), FieldSelector()
                ):
                    if ev.type == "DELETED":
                        await self.unserve(ev.object["metadata"]["name"])
                    elif ev.type in ("ADDED", "MODIFIED"):
                        await self.sync(ev.object)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("CRD controller: restarting after an error", exc_info=True)
                await asyncio.sleep(1)

    async def resolve(self, group: str, version: str, plural: str) -> Store | None:
        """The store of a custom resource a request names but this apiserver does not serve yet: a CRD created a
        moment ago (its watch event still on the way) is served now, so no client sees a 404 for it."""
        crd = await self.store.try_get("", f"{plural}.{group}")
        if crd is None:
            return None
        await self.sync(crd)
        return self.state.stores.get((group, version, plural))

    async def sync(self, crd: Obj) -> None:
        async with self._lock:
            if crd["metadata"].get("deletionTimestamp"):
                await self._cleanup(crd)
                return
            self._serve(crd)
            await self._establish(crd)
            await self._register_apiservices(crd)

    def _serve(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        spec = crd.get("spec") or {}
        keys = []
        for v in spec.get("versions") or []:
            if not v.get("served"):
                continue
            strategy = CustomResourceStrategy(crd, v)
            key = (strategy.group, strategy.version, strategy.plural)
            current = self.state.stores.get(key)
            if current is None or getattr(current.strategy, "schema_revision", None) != strategy.schema_revision:
                store = self._store_for(crd, strategy, v)
                self.state.stores[key] = store
                if v.get("storage") or strategy.resource_name not in self.state.by_resource:
                    self.state.by_resource[strategy.resource_name] = store
            keys.append(key)
        for key in set(self.served.get(name, [])) - set(keys):
            self.state.stores.pop(key, None)
        self.served[name] = keys

    def _store_for(self, crd: Obj, strategy: CustomResourceStrategy, version: Obj) -> Store:
        """A plain Store, or a ConvertingStore for a non-storage version of a CRD with a conversion webhook."""
        spec = crd.get("spec") or {}
        if (spec.get("conversion") or {}).get("strategy") != "Webhook" or version.get("storage"):
            return Store(strategy, self.state.backend)
        if self._webhooks is None:
            self._webhooks = WebhookClient(StoreSource(self.state.by_resource))
        storage = f"{spec['group']}/{storage_version(crd)}"
        return ConvertingStore(strategy, self.state.backend, storage, Converter(crd, self._webhooks))

    async def unserve(self, name: str) -> None:
        async with self._lock:
            for key in self.served.pop(name, []):
                store = self.state.stores.pop(key, None)
                if store is not None and self.state.by_resource.get(store.strategy.resource_name) is store:
                    self.state.by_resource.pop(store.strategy.resource_name, None)

    async def _establish(self, crd: Obj) -> None:
        names = (crd.get("spec") or {}).get("names") or {}
        status = crd.get("status") or {}
        types = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
        if {"NamesAccepted", "Established"} <= types and status.get("acceptedNames") == names:
            return

        def transform(old: Obj | None) -> Obj:
            assert old is not None
            new = dict(old)
            st_ = dict(new.get("status") or {})
            st_["acceptedNames"] = (new.get("spec") or {}).get("names") or {}
            st_["conditions"] = [
                _condition("NamesAccepted", "NoConflicts", "no conflicts found"),
                _condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            ]
            new["status"] = st_
            new["metadata"] = {k: v for k, v in new["metadata"].items() if k != "resourceVersion"}
            return new

        with contextlib.suppress(st.ApiError):
            await self.store.update("", crd["metadata"]["name"], transform, _CTX, "status")

    async def _register_apiservices(self, crd: Obj) -> None:
        if _APISERVICES not in self.state.by_resource:
            return
        apiservices = self.state.store(_APISERVICES)
        spec = crd.get("spec") or {}
        for i, v in enumerate(spec.get("versions") or []):
            if not v.get("served"):
                continue
            name = apiservice_name(spec["group"], v["name"])
            if await apiservices.try_get("", name) is not None:
                continue
            obj = {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": name, "labels": {AUTOMANAGED_LABEL: "true"}},
                "spec": {
                    "group": spec["group"],
                    "version": v["name"],
                    "groupPriorityMinimum": 1000,
                    "versionPriority": 100 - i,
                },
            }
            with contextlib.suppress(st.ApiError):
                await apiservices.create("", obj, _CTX)

    async def _unregister_apiservices(self, crd: Obj) -> None:
        if _APISERVICES not in self.state.by_resource:
            return
        apiservices = self.state.store(_APISERVICES)
        spec = crd.get("spec") or {}
        others = [c for c in (await self.store.list(None)).items if c["metadata"]["name"] != crd["metadata"]["name"]]
        still = {
            ((c.get("spec") or {}).get("group"), v.get("name"))
            for c in others
            for v in (c.get("spec") or {}).get("versions") or []
        }
        for v in spec.get("versions") or []:
            if (spec.get("group"), v.get("name")) in still:
                continue
            with contextlib.suppress(st.ApiError):
                await apiservices.delete("", apiservice_name(spec["group"], v["name"]), _CTX)

    async def _cleanup(self, crd: Obj) -> None:
        """Delete every custom object of the CRD, stop serving it, then let the CRD go (drop our finalizer)."""
        name = crd["metadata"]["name"]
        for key in self.served.get(name, []):
            store = self.state.stores.get(key)
            if store is None:
                continue
            page = await store.list(None)
            for obj in page.items:
                meta = obj["metadata"]
                with contextlib.suppress(st.ApiError):
                    await store.delete(meta.get("namespace", ""), meta["name"], _CTX, {"gracePeriodSeconds": 0})
            break  # all versions share one storage prefix
        for key in self.served.pop(name, []):
            store = self.state.stores.pop(key, None)
            if store is not None and self.state.by_resource.get(store.strategy.resource_name) is store:
                self.state.by_resource.pop(store.strategy.resource_name, None)
        await self._unregister_apiservices(crd)
        if CLEANUP_FINALIZER not in (crd["metadata"].get("finalizers") or []):
            return

        def transform(old: Obj | None) -> Obj:
            assert old is not None
            new = dict(old)
            meta = {k: v for k, v in new["metadata"].items() if k != "resourceVersion"}
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != CLEANUP_FINALIZER]
            new["metadata"] = meta
            return new

        with contextlib.suppress(st.ApiError):
            await self.store.update("", name, transform, _CTX)
