"""CRD conversion webhooks (`spec.conversion.strategy: Webhook`, ConversionReview v1).

Custom objects are stored at the CRD's storage version. A served version other than the storage version is a
`ConvertingStore`: what it stores is converted to the storage version by the webhook (after validation and
admission, right before the write), and what it reads is converted from the storage version to its own. A failed
conversion is kube's `Internal error occurred: conversion webhook for <group/version, Kind=K> failed: …`.
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.admission.webhook.caller import CallError, WebhookClient
from pykubeadm.apiserver.registry import Store
from pykubeadm.apiserver.registry.base import Obj, RequestContext
from pykubeadm.apiserver.registry.store import Admit, ListPage
from pykubeadm.apiserver.registry.watchcache import WATCH_BUFFER, WatchClosed, Watcher, WatchEvent
from pykubeadm.apiserver.selectors import FieldSelector, LabelSelector
from pykubeadm.util import jsoncodec

__all__ = ["Converter", "ConvertingStore", "StoreSource"]

#: kube's timeout for a conversion webhook call.
CONVERSION_TIMEOUT_SECONDS = 30


class StoreSource:
    """The ObjectSource the webhook client resolves Services with, read straight from the stores."""

    def __init__(self, by_resource: dict[str, Store]):
        self._by_resource = by_resource

    async def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        store = self._by_resource.get(resource)
        return None if store is None else await store.try_get(namespace, name)

    async def list(self, resource: str, namespace: str | None = None) -> builtins.list[Obj]:
        store = self._by_resource.get(resource)
        return [] if store is None else (await store.list(namespace)).items


class Converter:
    """Calls one CRD's conversion webhook."""

    def __init__(self, crd: Obj, client: WebhookClient):
        spec = crd.get("spec") or {}
        self.kind = (spec.get("names") or {}).get("kind", "")
        webhook = (spec.get("conversion") or {}).get("webhook") or {}
        self.client_config: Obj = webhook.get("clientConfig") or {}
        self._client = client

    def _failed(self, api_version: str, reason: str) -> st.ApiError:
        group, _, version = api_version.rpartition("/")
        return st.internal(f"conversion webhook for {group}/{version}, Kind={self.kind} failed: {reason}")

    async def convert(self, objects: list[Obj], desired: str) -> list[Obj]:
        """The objects at apiVersion `desired` (objects already there are passed through unchanged)."""
        todo = [o for o in objects if o.get("apiVersion") != desired]
        if not todo:
            return objects
        source = str(todo[0].get("apiVersion", ""))
        uid = str(uuid.uuid4())
        review = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": todo},
        }
        try:
            data = await self._client.post(self.client_config, jsoncodec.dumps(review), CONVERSION_TIMEOUT_SECONDS)
            answer = jsoncodec.loads(data)
        except CallError as e:
            raise self._failed(source, str(e)) from None
        except ValueError as e:
            raise self._failed(source, f"received invalid webhook response: {e}") from None
        response = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(response, dict):
            raise self._failed(source, "conversion webhook response was absent")
        if response.get("uid") != uid:
            raise self._failed(source, f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
        result = response.get("result") or {}
        if result.get("status") != "Success":
            raise st.internal(
                f"conversion webhook for {source.rpartition('/')[0]}/{source.rpartition('/')[2]}, Kind={self.kind} "
                f"returned failure: {result.get('message', '')}"
            )
        converted = response.get("convertedObjects") or []
        if len(converted) != len(todo):
            raise self._failed(source, f"expected {len(todo)} converted objects, got {len(converted)}")
        out: list[Obj] = []
        it = iter(converted)
        for original in objects:
            if original.get("apiVersion") == desired:
                out.append(original)
                continue
            new = next(it)
            if not isinstance(new, dict) or new.get("apiVersion") != desired:
                raise self._failed(source, f"invalid converted object: apiVersion must be {desired}")
            meta = dict(original.get("metadata") or {})  # kube keeps metadata but labels and annotations
            new_meta = new.get("metadata") or {}
            for key in ("labels", "annotations"):
                if key in new_meta:
                    meta[key] = new_meta[key]
            new["metadata"] = meta
            out.append(new)
        return out


class ConvertingStore(Store):
    """A non-storage served version of a CRD whose conversion strategy is Webhook."""

    def __init__(self, strategy: Any, backend: Any, storage_api_version: str, converter: Converter):
        super().__init__(strategy, backend)
        self.storage_api_version = storage_api_version
        self.converter = converter

    async def _out(self, objs: builtins.list[Obj]) -> builtins.list[Obj]:
        for o in objs:  # decode labelled them with this version; their content is the storage version's
            o["apiVersion"] = self.storage_api_version
        return await self.converter.convert(objs, self.strategy.api_version)

    async def _one_out(self, obj: Obj) -> Obj:
        return (await self._out([obj]))[0]

    def _admit_then_convert(self, admit: Admit | None) -> Admit:
        async def run(op: str, new: Obj | None, old: Obj | None) -> None:
            if admit is not None:
                await admit(op, new, old)
            if new is not None and op in ("CREATE", "UPDATE"):
                stored = (await self.converter.convert([dict(new)], self.storage_api_version))[0]
                new.clear()
                new.update(stored)

        return run

    async def get(self, namespace: str, name: str) -> Obj:
        return await self._one_out(await super().get(namespace, name))

    async def try_get(self, namespace: str, name: str) -> Obj | None:
        obj = await super().try_get(namespace, name)
        return None if obj is None else await self._one_out(obj)

    async def list(self, *args: Any, **kwargs: Any) -> ListPage:
        page = await super().list(*args, **kwargs)
        if not page.items:
            return page
        return dataclasses.replace(page, items=await self._out(page.items))

    async def create(self, namespace: str, obj: Obj, ctx: RequestContext, admit: Admit | None = None) -> Obj:
        return await self._one_out(await super().create(namespace, obj, ctx, self._admit_then_convert(admit)))

    async def update(
        self,
        namespace: str,
        name: str,
        transform: Callable[[Obj | None], Obj],
        ctx: RequestContext,
        subresource: str = "",
        admit: Admit | None = None,
        create_if_missing: bool = False,
    ) -> tuple[Obj, bool]:
        current = await super().try_get(namespace, name)
        converted = None if current is None else await self._one_out(dict(current))
        rv = None if current is None else current["metadata"].get("resourceVersion")

        def at_this_version(old: Obj | None) -> Obj:
            if old is None:
                return transform(None)
            if old["metadata"].get("resourceVersion") != rv or converted is None:
                raise st.conflict(self.plural, self.group, name, st.OPTIMISTIC_LOCK_MSG)
            return transform(dict(converted))

        obj, created = await super().update(namespace, name, at_this_version, ctx, subresource,
                                            self._admit_then_convert(admit), create_if_missing)  # fmt: skip
        return await self._one_out(obj), created

    async def open_watch(
        self, namespace: str | None, start_revision: int, labels: LabelSelector, fields: FieldSelector
    ) -> Watcher:
        """The storage watch, each event's object converted to this version (a failed conversion ends the watch
        with its error)."""
        inner = await super().open_watch(namespace, start_revision, labels, fields)
        outer = Watcher(namespace, start_revision, labels, fields, WATCH_BUFFER)

        async def pump() -> None:
            try:
                while not outer.closed:
                    try:
                        batch = inner.drain()
                    except WatchClosed:
                        break
                    for ev in batch:
                        obj = await self._one_out(copy.deepcopy(ev.object))
                        outer.deliver(WatchEvent(ev.type, obj, ev.revision))
                    if not batch:
                        await inner.wait(3600.0)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                outer.close(e)
            finally:
                inner.close()
            outer.close()

        task = asyncio.create_task(pump())

        def stop(_w: Watcher) -> None:
            if not task.done():
                task.cancel()

        outer.on_close = stop
        return outer

    async def delete(
        self,
        namespace: str,
        name: str,
        ctx: RequestContext,
        options: dict[str, Any] | None = None,
        admit: Admit | None = None,
    ) -> tuple[Obj, bool]:
        obj, removed = await super().delete(namespace, name, ctx, options, admit)
        return await self._one_out(obj), removed
