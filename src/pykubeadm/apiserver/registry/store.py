"""The generic registry `Store`: one per resource kind, over the storage `Store`; the only code that fills metadata.

Handlers call it for get/list/create/update/delete/watch. It owns uid, creationTimestamp, resourceVersion, generation,
generateName retries, optimistic concurrency (409 with kube-apiserver's message), finalizer-driven deletion and the
translation of storage errors into `ApiError`s. Per-kind behaviour comes from the kind's `Strategy`.
"""

from __future__ import annotations

import copy
import secrets
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pykubeadm.apiserver import status as st
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
from pykubeadm.apiserver.registry.storeutil import (
    decode_continue,
    encode_continue,
    finalizer_rules,
    storage_error,
    validate_labels,
)
from pykubeadm.apiserver.selectors import FieldSelector, LabelSelector
from pykubeadm.storage import interface as si
from pykubeadm.util import jsoncodec

__all__ = ["Admit", "ListPage", "Store", "WatchEvent"]

#: Validating-admission callback: (operation, new object or None, old object or None) → raises ApiError to reject.
Admit = Callable[[str, Obj | None, Obj | None], Awaitable[None]]

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_GENERATE_ATTEMPTS = 3
#: Objects per kind whose last known state `update` remembers.
_RECENT_MAX = 512


@dataclass
class ListPage:
    items: list[Obj]
    resource_version: str
    continue_token: str = ""
    remaining: int | None = None


@dataclass
class WatchEvent:
    type: str  # ADDED MODIFIED DELETED
    object: Obj
    revision: int


def _copy(obj: Any) -> Any:
    """A deep copy of a JSON value (an order of magnitude faster than copy.deepcopy)."""
    try:
        return jsoncodec.loads(jsoncodec.dumps(obj))
    except (TypeError, ValueError):
        return copy.deepcopy(obj)


def _dumps(obj: Obj) -> bytes:
    meta = obj.get("metadata")
    rv = meta.pop("resourceVersion", None) if meta else None
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

    def _validate_meta(self, obj: Obj) -> list[st.Cause]:
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

    def _invalid(self, obj: Obj, causes: list[st.Cause]) -> st.ApiError:
        return st.invalid(self.strategy.kind, self.group, obj.get("metadata", {}).get("name", ""), causes)

    async def create(self, namespace: str, obj: Obj, ctx: RequestContext, admit: Admit | None = None) -> Obj:
        obj = _copy(obj)
        self._fill_create_meta(obj, namespace)
        self.strategy.prepare_for_create(obj, ctx)
        meta = obj["metadata"]
        generate = not meta.get("name") and bool(meta.get("generateName"))
        for attempt in range(_GENERATE_ATTEMPTS if generate else 1):
            if generate:
                meta["name"] = str(meta["generateName"])[:58] + "".join(secrets.choice(_NAME_CHARS) for _ in range(5))
            causes = self._validate_meta(obj) + self.strategy.validate(obj, ctx)
            if causes:
                raise self._invalid(obj, causes)
            self.strategy.canonicalize(obj)
            if admit is not None:
                await admit("CREATE", obj, None)
            key = self.key(namespace, meta["name"])
            if ctx.dry_run:
                if await self._backend_get(key) is not None:
                    raise st.already_exists(self.plural, self.group, meta["name"])
                return obj
            try:
                kv = await self.backend.create(key, _dumps(obj))
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
            if admit is not None:
                await admit("UPDATE", new, old)
            new["metadata"].pop("resourceVersion", None)
            old["metadata"].pop("resourceVersion", None)
            if new == old:  # no-op update: no write, same resourceVersion
                if cached:
                    continue  # answered with the stored object, so it must be the current one
                old["metadata"]["resourceVersion"] = str(kv.mod_revision)
                return old, False
            deleting = bool(new["metadata"].get("deletionTimestamp")) and not self.strategy.has_finalizers(new)
            if ctx.dry_run:
                new["metadata"]["resourceVersion"] = str(kv.mod_revision)
                return new, False
            try:
                if deleting:
                    self._forget(key)
                    dkv = await self.backend.delete(key, kv.mod_revision)
                    new["metadata"]["resourceVersion"] = str(dkv.mod_revision)
                    return new, False
                nkv = await self.backend.update(key, _dumps(new), kv.mod_revision)
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
        """Delete or, when finalizers remain, mark for deletion. Returns (object, removed_now)."""
        key = self.key(namespace, name)
        self._forget(key)
        for _ in range(16):
            kv = await self._backend_get(key)
            if kv is None:
                raise self._nf(name)
            obj = self.decode(kv)
            meta = obj["metadata"]
            pre = (options or {}).get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise st.conflict(
                    self.plural,
                    self.group,
                    name,
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}",
                )
            if pre.get("resourceVersion") and str(pre["resourceVersion"]) != meta["resourceVersion"]:
                raise st.conflict(
                    self.plural,
                    self.group,
                    name,
                    f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                    f"ResourceVersion in object meta: {meta['resourceVersion']}",
                )
            if admit is not None:
                await admit("DELETE", None, obj)
            marked = _copy(obj)
            if self.strategy.graceful_delete(marked, options):
                if meta.get("deletionTimestamp"):
                    return obj, False
                marked["metadata"]["deletionTimestamp"] = now_rfc3339()
                marked["metadata"].setdefault("deletionGracePeriodSeconds", 0)
                if ctx.dry_run:
                    return marked, False
                try:
                    nkv = await self.backend.update(key, _dumps(marked), kv.mod_revision)
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

    async def watch(
        self, namespace: str | None, start_revision: int, labels: LabelSelector, fields: FieldSelector
    ) -> AsyncIterator[WatchEvent]:
        """Changes after `start_revision - 1`, filtered; objects leaving/entering the selection become DELETED/ADDED."""
        it = self.backend.watch(self.prefix(namespace), start_revision)
        try:
            async for ev in it:
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
