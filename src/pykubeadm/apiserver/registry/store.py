"""The generic registry `Store`: one per resource kind, over the storage `Store`; the only code that fills metadata.

Handlers call it for get/list/create/update/delete/watch. It owns uid, creationTimestamp, resourceVersion, generation,
generateName retries, optimistic concurrency (409 with kube-apiserver's message), finalizer-driven deletion and the
translation of storage errors into `ApiError`s. Per-kind behaviour comes from the kind's `Strategy`.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import copy
import secrets
import uuid
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.patching.managedfields import FieldManager, record_update
from pykubeadm.apiserver.printing import now_rfc3339
from pykubeadm.apiserver.registry.base import (
    Obj,
    RequestContext,
    Strategy,
    required,
    validate_dns_label,
    validate_dns_subdomain,
    validate_path_segment,
)
from pykubeadm.apiserver.registry.deletion import (
    check_preconditions,
    delete_on_update,
    normalize_options,
    plan_deletion,
)
from pykubeadm.apiserver.registry.storeutil import (
    decode_continue,
    encode_continue,
    finalizer_rules,
    storage_error,
    validate_labels,
)
from pykubeadm.apiserver.registry.watchcache import WATCH_BUFFER, WatchCache, WatchClosed, Watcher, WatchEvent
from pykubeadm.apiserver.selectors import FieldSelector, LabelSelector
from pykubeadm.storage import interface as si
from pykubeadm.storage.transformed import is_stale
from pykubeadm.util import jsoncodec

__all__ = ["Admit", "ListPage", "Store", "WatchEvent"]

#: Validating-admission callback: (operation, new object or None, old object or None) → raises ApiError to reject.
Admit = Callable[[str, Obj | None, Obj | None], Awaitable[None]]

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_GENERATE_ATTEMPTS = 3
#: Objects per kind whose last known state `update` remembers: every node's Lease and Node of a 5000-node cluster
#: (with 512, 5000 renewers taking turns missed on every update, which then read storage first).
_RECENT_MAX = 8192


@dataclass
class ListPage:
    items: list[Obj]
    resource_version: str
    continue_token: str = ""
    remaining: int | None = None


def _copy(obj: Any) -> Any:
    """A deep copy of a JSON value (an order of magnitude faster than copy.deepcopy)."""
    try:
        return jsoncodec.loads(jsoncodec.dumps(obj))
    except (TypeError, ValueError):
        return copy.deepcopy(obj)


def _dumps(obj: Obj) -> bytes:
    meta = obj.get("metadata")
    if not meta:
        return jsoncodec.dumps(obj)
    rv = meta.pop("resourceVersion", None)
    try:
        return jsoncodec.dumps(obj)
    finally:
        if rv is not None:
            meta["resourceVersion"] = rv


class Store:
    """Registry store of one kind; `backend` is any storage.interface.Store."""

    def __init__(self, strategy: Strategy, backend: si.Store):
        self.strategy = strategy
        self.backend = backend
        self.plural = strategy.plural
        self.group = strategy.group
        # The last state this apiserver read or wrote of recently updated objects. An update tries its compare-and-
        # swap against it instead of reading first, as kube-apiserver's GuaranteedUpdate does with the watch cache's
        # object: a stale entry (another apiserver wrote) costs only the failed swap, whose answer carries the
        # current state. Never used to answer without storage confirming it (409s and no-op updates re-read).
        self._recent: OrderedDict[str, si.KeyValue] = OrderedDict()
        # Every watch is served by one watch cache per kind (see watchcache.py).
        self._watch_cache = WatchCache(strategy, backend, strategy.key_prefix, self.decode)

    def _remember(self, kv: si.KeyValue) -> None:
        self._recent[kv.key] = kv
        self._recent.move_to_end(kv.key)
        if len(self._recent) > _RECENT_MAX:
            self._recent.popitem(last=False)

    def _forget(self, key: str) -> None:
        self._recent.pop(key, None)

    # --- keys and codec -------------------------------------------------------------------------------------------

    def key(self, namespace: str, name: str) -> str:
        if self.strategy.namespaced:
            return f"{self.strategy.key_prefix}{namespace}/{name}"
        return f"{self.strategy.key_prefix}{name}"

    def prefix(self, namespace: str | None) -> str:
        if self.strategy.namespaced and namespace:
            return f"{self.strategy.key_prefix}{namespace}/"
        return self.strategy.key_prefix

    def decode(self, kv: si.KeyValue, revision: int | None = None) -> Obj:
        obj = jsoncodec.loads(kv.value)
        obj.setdefault("metadata", {})["resourceVersion"] = str(revision or kv.mod_revision)
        obj["kind"] = self.strategy.kind
        obj["apiVersion"] = self.strategy.api_version
        return obj

    def encode(self, obj: Obj) -> bytes:
        """The stored bytes of an object (its resourceVersion is the store's revision, never stored)."""
        return _dumps(obj)

    def _nf(self, name: str) -> st.ApiError:
        return st.not_found(self.plural, self.group, name)

    def _conflict(self, name: str) -> st.ApiError:
        return st.conflict(self.plural, self.group, name, st.OPTIMISTIC_LOCK_MSG)

    # --- reads ----------------------------------------------------------------------------------------------------

    async def get(self, namespace: str, name: str) -> Obj:
        kv = await self._backend_get(self.key(namespace, name))
        if kv is None:
            raise self._nf(name)
        return self.decode(kv)

    async def try_get(self, namespace: str, name: str) -> Obj | None:
        kv = await self._backend_get(self.key(namespace, name))
        return None if kv is None else self.decode(kv)

    async def _backend_get(self, key: str) -> si.KeyValue | None:
        try:
            return await self.backend.get(key)
        except si.StoreError as e:
            raise storage_error(e) from e

    def matches(self, obj: Obj, labels: LabelSelector, fields: FieldSelector) -> bool:
        if not labels.empty() and not labels.matches(obj.get("metadata", {}).get("labels")):
            return False
        return fields.empty() or fields.matches(self.strategy.get_attrs(obj))

    async def list(
        self,
        namespace: str | None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        limit: int = 0,
        continue_token: str = "",
        at_revision: int = 0,
    ) -> ListPage:
        """One page of matching objects; `at_revision` reads the state at that revision (resourceVersionMatch=Exact)."""
        labels = labels or LabelSelector()
        fields = fields or FieldSelector()
        prefix = self.prefix(namespace)
        revision, start = at_revision, None
        if continue_token:
            revision, start = decode_continue(continue_token)
            if not start.startswith(prefix):
                raise st.bad_request("continue key is not valid: incorrect encoded start resourceVersion")
        name = fields.single_name()
        items: list[Obj] = []
        try:
            if (
                name is not None
                and not continue_token
                and not at_revision
                and (namespace or not self.strategy.namespaced)
            ):
                rev = await self.backend.current_revision()
                kv = await self.backend.get(self.key(namespace or "", name))
                if kv is not None:
                    obj = self.decode(kv)
                    if self.matches(obj, labels, fields):
                        items.append(obj)
                return ListPage(items, str(max(rev, kv.mod_revision if kv else 0)))
            while True:
                page = await self.backend.list(prefix, revision=revision, limit=limit, start_key=start)
                revision = page.revision
                for kv in page.items:
                    obj = self.decode(kv)
                    if self.matches(obj, labels, fields):
                        items.append(obj)
                if not page.more:
                    return ListPage(items, str(revision))
                start = page.items[-1].key + "\x00"
                if limit and len(items) >= limit:
                    remaining = page.remaining if labels.empty() and fields.empty() else None
                    return ListPage(items, str(revision), encode_continue(revision, start), remaining)
        except si.CompactedError:
            raise st.ApiError(
                410,
                "Expired",
                "The provided continue parameter is too old to display a consistent list result. You can start a new "
                "list without the continue parameter.",
            ) from None
        except si.StoreError as e:
            raise storage_error(e) from e

    # --- create ---------------------------------------------------------------------------------------------------

    def _fill_create_meta(self, obj: Obj, namespace: str) -> None:
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        for k in (
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ):
            meta.pop(k, None)
        if self.strategy.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if self.strategy.track_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        obj["kind"] = self.strategy.kind
        obj["apiVersion"] = self.strategy.api_version

    def _validate_meta(self, obj: Obj) -> builtins.list[st.Cause]:
        meta = obj.get("metadata", {})
        name = meta.get("name", "")
        causes: list[st.Cause] = []
        if not name:
            causes.append(
                st.Cause("FieldValueRequired", "Required value: name or generateName is required", "metadata.name")
            )
        else:
            rule = self.strategy.name_rule
            check = {"label": validate_dns_label, "path": validate_path_segment}.get(rule, validate_dns_subdomain)
            causes += check(name)
        if self.strategy.namespaced and not meta.get("namespace"):
            causes.append(required("metadata.namespace"))
        causes += validate_labels(meta.get("labels"), "metadata.labels")
        ann = meta.get("annotations")
        if ann is not None and (not isinstance(ann, dict) or not all(isinstance(v, str) for v in ann.values())):
            causes.append(
                st.Cause("FieldValueInvalid", "Invalid value: annotations must be strings", "metadata.annotations")
            )
        return causes

    def _invalid(self, obj: Obj, causes: builtins.list[st.Cause]) -> st.ApiError:
        return st.invalid(self.strategy.kind, self.group, obj.get("metadata", {}).get("name", ""), causes)

    def revalidate(self, obj: Obj, old: Obj | None, ctx: RequestContext, subresource: str = "") -> None:
        """Validate again an object that mutating admission webhooks changed after the strategy had validated it
        (kube-apiserver validates after mutating admission); raises the 422 Invalid error."""
        if subresource and old is not None:
            causes = self.strategy.validate_subresource(subresource, obj, old, ctx)
        elif old is not None:
            causes = self._validate_meta(obj) + self.strategy.validate_update(obj, old, ctx)
        else:
            causes = self._validate_meta(obj) + self.strategy.validate(obj, ctx)
        if causes:
            raise self._invalid(obj, causes)

    async def create(self, namespace: str, obj: Obj, ctx: RequestContext, admit: Admit | None = None) -> Obj:
        given = _copy(obj)
        self._fill_create_meta(given, namespace)
        generate = not given["metadata"].get("name") and bool(given["metadata"].get("generateName"))
        for attempt in range(_GENERATE_ATTEMPTS if generate else 1):
            # The name is generated before PrepareForCreate, as in kube-apiserver (a Job's template labels carry it).
            obj = _copy(given) if generate else given
            meta = obj["metadata"]
            if generate:
                meta["name"] = str(meta["generateName"])[:58] + "".join(secrets.choice(_NAME_CHARS) for _ in range(5))
            self.strategy.prepare_for_create(obj, ctx)
            meta = obj["metadata"]
            causes = self._validate_meta(obj) + self.strategy.validate(obj, ctx)
            if causes:
                raise self._invalid(obj, causes)
            self.strategy.canonicalize(obj)
            if ctx.field_manager and ctx.operation != "Apply":
                record_update(self.strategy, obj, None, FieldManager(ctx.field_manager, self.strategy.api_version))
            if admit is not None:
                await admit("CREATE", obj, None)
            key = self.key(namespace, meta["name"])
            if ctx.dry_run:
                if await self._backend_get(key) is not None:
                    raise st.already_exists(self.plural, self.group, meta["name"])
                return obj
            try:
                kv = await self.backend.create(key, self.encode(obj))
            except si.KeyExistsError:
                if generate and attempt + 1 < _GENERATE_ATTEMPTS:
                    continue
                err = st.already_exists(self.plural, self.group, meta["name"])
                if generate:
                    err.message += ", the server was not able to generate a unique name for the object"
                raise err from None
            except si.StoreError as e:
                raise storage_error(e) from e
            meta["resourceVersion"] = str(kv.mod_revision)
            return obj
        raise AssertionError("unreachable")

    # --- update ---------------------------------------------------------------------------------------------------

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
        """Read-modify-write with retries. `transform(old)` returns the desired object (old is None when missing).
        A resourceVersion in the desired object is a precondition (409 on mismatch); without one the update is
        unconditional and retried on races. Returns (object, created)."""
        key = self.key(namespace, name)
        hint = None if ctx.dry_run else self._recent.get(key)
        kv: si.KeyValue | None
        for _ in range(16):
            cached = hint is not None
            if hint is not None:
                kv, hint = hint, None
            else:
                kv = await self._backend_get(key)
            if kv is None:
                self._forget(key)
                if not (create_if_missing or self.strategy.allow_create_on_update) or subresource:
                    raise self._nf(name)
                new = transform(None)
                new.setdefault("metadata", {})["name"] = name
                return await self.create(namespace, new, ctx, admit), True
            old = self.decode(kv)
            new = _copy(transform(self.decode(kv)))  # transform may return a shared object (a retried body)
            if not isinstance(new, dict) or not isinstance(new.get("metadata", {}), dict):
                raise st.bad_request("the object provided is not a valid object")
            meta = new.setdefault("metadata", {})
            rv = meta.get("resourceVersion")
            if rv not in (None, "") and str(rv) != str(kv.mod_revision):
                if cached:
                    continue  # the client may know a newer version than we do: ask storage before a 409
                raise self._conflict(name)
            if rv in (None, "") and not self.strategy.allow_unconditional_update:
                raise self._invalid(
                    new, [st.Cause("FieldValueInvalid", "must be specified for an update", "metadata.resourceVersion")]
                )
            body_name = meta.get("name")
            if body_name and body_name != name:
                raise st.bad_request(
                    f"the name of the object ({body_name}) does not match the name on the URL ({name})"
                )
            self._keep_system_meta(new, old, namespace, name)
            if subresource:
                self.strategy.prepare_for_subresource(subresource, new, old, ctx)
                causes = self.strategy.validate_subresource(subresource, new, old, ctx)
            else:
                self.strategy.prepare_for_update(new, old, ctx)
                causes = self._validate_meta(new) + self.strategy.validate_update(new, old, ctx)
                causes += finalizer_rules(new, old)
            if causes:
                raise self._invalid(new, causes)
            self.strategy.canonicalize(new)
            if self.strategy.track_generation and new.get("spec") != old.get("spec"):
                new["metadata"]["generation"] = int(old["metadata"].get("generation") or 1) + 1
            if ctx.field_manager and ctx.operation != "Apply":
                fm = FieldManager(ctx.field_manager, self.strategy.api_version, subresource)
                record_update(self.strategy, new, old, fm)
            if admit is not None:
                await admit("UPDATE", new, old)
            new["metadata"].pop("resourceVersion", None)
            old["metadata"].pop("resourceVersion", None)
            # A no-op update writes nothing and keeps the resourceVersion, unless the stored value was written by an
            # encryption provider that no longer writes (then it is rewritten with the current one, as kube does).
            if new == old and not is_stale(kv):
                if cached:
                    continue  # answered with the stored object, so it must be the current one
                old["metadata"]["resourceVersion"] = str(kv.mod_revision)
                return old, False
            deleting = delete_on_update(self.strategy, new, old)
            if ctx.dry_run:
                new["metadata"]["resourceVersion"] = str(kv.mod_revision)
                return new, False
            try:
                if deleting:
                    self._forget(key)
                    dkv = await self.backend.delete(key, kv.mod_revision)
                    new["metadata"]["resourceVersion"] = str(dkv.mod_revision)
                    return new, False
                nkv = await self.backend.update(key, self.encode(new), kv.mod_revision)
            except si.ConflictError as e:
                self._forget(key)
                if rv not in (None, ""):
                    raise self._conflict(name) from None
                hint = e.current  # the state that won: retry against it without another read
                continue
            except si.KeyNotFoundError:
                self._forget(key)
                if cached:
                    continue
                raise self._nf(name) from None
            except si.StoreError as e:
                raise storage_error(e) from e
            self._remember(nkv)
            new["metadata"]["resourceVersion"] = str(nkv.mod_revision)
            return new, False
        raise self._conflict(name)

    def _keep_system_meta(self, new: Obj, old: Obj, namespace: str, name: str) -> None:
        meta, ometa = new["metadata"], old["metadata"]
        meta["name"] = name
        if self.strategy.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if k in ometa:
                meta[k] = ometa[k]
            else:
                meta.pop(k, None)
        meta.pop("selfLink", None)
        new["kind"] = self.strategy.kind
        new["apiVersion"] = self.strategy.api_version

    # --- delete ---------------------------------------------------------------------------------------------------

    async def delete(
        self,
        namespace: str,
        name: str,
        ctx: RequestContext,
        options: dict[str, Any] | None = None,
        admit: Admit | None = None,
    ) -> tuple[Obj, bool]:
        """Delete now, or mark for deletion (graceful period, finalizers, GC propagation: see deletion.py).
        Returns (the object as deleted or as it now stays, removed_now)."""
        key = self.key(namespace, name)
        self._forget(key)
        options = normalize_options(options)
        for _ in range(16):
            kv = await self._backend_get(key)
            if kv is None:
                raise self._nf(name)
            obj = self.decode(kv)
            check_preconditions(self.plural, self.group, obj, options.get("preconditions") or {})
            if admit is not None:
                await admit("DELETE", None, obj)
            marked = _copy(obj)
            plan = plan_deletion(self.strategy, marked, options)
            if plan == "pending":
                return obj, False
            if plan == "keep":
                if marked == obj or ctx.dry_run:
                    return marked, False
                marked["metadata"].pop("resourceVersion", None)
                try:
                    nkv = await self.backend.update(key, self.encode(marked), kv.mod_revision)
                except si.ConflictError:
                    continue
                except si.StoreError as e:
                    raise storage_error(e) from e
                marked["metadata"]["resourceVersion"] = str(nkv.mod_revision)
                return marked, False
            if ctx.dry_run:
                return obj, True
            try:
                await self.backend.delete(key, kv.mod_revision)
            except si.ConflictError:
                continue
            except si.KeyNotFoundError:
                raise self._nf(name) from None
            except si.StoreError as e:
                raise storage_error(e) from e
            return obj, True
        raise self._conflict(name)

    # --- watch ----------------------------------------------------------------------------------------------------

    async def open_watch(
        self, namespace: str | None, start_revision: int, labels: LabelSelector, fields: FieldSelector
    ) -> Watcher:
        """A watcher of the changes at or after `start_revision`, filtered; objects leaving/entering the selection
        become DELETED/ADDED. Served by the kind's watch cache; a revision older than its history is watched from
        storage (which raises CompactedError, through the watcher, for a compacted one)."""
        if not self.strategy.namespaced:
            namespace = None
        w = await self._watch_cache.watch(namespace, start_revision, labels, fields)
        if w is not None:
            return w
        w = Watcher(namespace, start_revision, labels, fields, WATCH_BUFFER)
        task = asyncio.create_task(self._pump(w, self._watch_storage(namespace, start_revision, labels, fields)))

        def stop_pump(_w: Watcher) -> None:
            if not task.done():
                task.cancel()

        w.on_close = stop_pump
        return w

    @staticmethod
    async def _pump(w: Watcher, it: AsyncGenerator[WatchEvent, None]) -> None:
        try:
            async for ev in it:
                while w.backlog >= WATCH_BUFFER // 2 and not w.closed:
                    await asyncio.sleep(0.01)  # a storage watch is pulled: wait for the handler to drain
                w.deliver(ev)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            w.close(e)
        finally:
            with contextlib.suppress(BaseException):
                await it.aclose()
        w.close()

    async def watch(
        self, namespace: str | None, start_revision: int, labels: LabelSelector, fields: FieldSelector
    ) -> AsyncGenerator[WatchEvent, None]:
        """`open_watch` as an async iterator of private copies (for in-process consumers, which may keep and change
        the objects they receive); ends when the watcher is closed, raises CompactedError for a compacted revision."""
        w = await self.open_watch(namespace, start_revision, labels, fields)
        try:
            while True:
                try:
                    batch = w.drain()
                except WatchClosed:
                    return
                for ev in batch:
                    yield WatchEvent(ev.type, _copy(ev.object), ev.revision)
                if not batch:
                    await w.wait(3600.0)
        finally:
            w.close()

    async def _watch_storage(
        self, namespace: str | None, start_revision: int, labels: LabelSelector, fields: FieldSelector
    ) -> AsyncGenerator[WatchEvent, None]:
        """A storage watch of this watcher alone (a start older than the watch cache's history)."""
        name = fields.single_name()
        single = name is not None and (namespace or not self.strategy.namespaced)
        only = self.key(namespace or "", name) if single and name is not None else ""
        it = self.backend.watch(self.prefix(namespace), start_revision)
        try:
            async for ev in it:
                if only and ev.kv.key != only:
                    continue  # a single-object watch: other keys are skipped undecoded
                obj = self.decode(ev.kv)
                now = ev.type != "DELETED" and self.matches(obj, labels, fields)
                before = False
                if ev.prev is not None:
                    pobj = self.decode(ev.prev)
                    before = self.matches(pobj, labels, fields)
                if ev.type == "ADDED":
                    if now:
                        yield WatchEvent("ADDED", obj, ev.revision)
                elif ev.type == "DELETED":
                    if before or self.matches(obj, labels, fields):
                        yield WatchEvent("DELETED", obj, ev.revision)
                elif now and before:
                    yield WatchEvent("MODIFIED", obj, ev.revision)
                elif now:
                    yield WatchEvent("ADDED", obj, ev.revision)
                elif before:
                    yield WatchEvent("DELETED", obj, ev.revision)
        finally:
            aclose = getattr(it, "aclose", None)
            if aclose is not None:
                await aclose()
