"""API-side helpers shared by the workload controllers: an event recorder, Pod control and ControllerRef claiming.

* `EventRecorder` writes core/v1 Events the way client-go's record.EventRecorder does (name `<object>.<hex nanos>`,
  `source.component` = the controller's component, e.g. `replicaset-controller`), without blocking the sync.
* `PodControl` creates Pods from a template with an owner reference and deletes them, recording kube's events
  (`SuccessfulCreate` "Created pod: NAME", `FailedCreate` "Error creating: …", `SuccessfulDelete` "Deleted pod: NAME",
  `FailedDelete` "Error deleting: …").
* `claim` is the ControllerRefManager: objects whose controller is `owner` are kept while its selector matches them and
  released (owner reference removed) when not; orphans matching the selector are adopted, after one fresh read of the
  owner shows it is still there and not being deleted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast

from lightkube import AsyncClient
from lightkube.core.dictmixin import DictMixin
from lightkube.resources.core_v1 import Event, Pod
from lightkube.types import PatchType

from pykubeadm.client import ApiError, is_not_found
from pykubeadm.controllers.controllerutil import controller_of, pod_from_template, selector_matches
from pykubeadm.util.apitime import now_time

__all__ = ["ClaimError", "EventRecorder", "PodControl", "api_error_message", "claim", "model"]

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
M = TypeVar("M", bound=DictMixin)


def model(cls: type[M], data: dict[str, Any]) -> M:
    """`cls.from_dict(data)`, typed as `cls` (lightkube annotates from_dict as returning DictMixin, not the class)."""
    return cast(M, cls.from_dict(data))


def api_error_message(err: BaseException) -> str:
    """The server's Status message (what Go's err.Error() prints for an API error), else str(err)."""
    if isinstance(err, ApiError) and getattr(err.status, "message", None):
        return str(err.status.message)
    return str(err)


class EventRecorder:
    """Fire-and-forget core/v1 Events about objects (dicts with apiVersion/kind, or with them passed explicitly).

    As client-go's EventCorrelator, an event identical to one recorded in the last 10 minutes (same object, type,
    reason and message) bumps that Event's `count` and `lastTimestamp` instead of adding another."""

    #: how long a repeat is folded into the earlier Event, and how many recent events are remembered
    AGGREGATE_SECONDS = 600.0
    CACHE_SIZE = 4096

    def __init__(self, client: AsyncClient, component: str):
        self.client = client
        self.component = component
        self._tasks: set[asyncio.Task[None]] = set()
        self._recent: OrderedDict[tuple[Any, ...], tuple[str, int, float]] = OrderedDict()
        self._lock = asyncio.Lock()

    def event(self, obj: Obj, type_: str, reason: str, message: str, *, kind: str = "", api_version: str = "") -> None:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        now = now_time()
        body: dict[str, Any] = {
            "metadata": {"name": f"{meta.get('name')}.{time.time_ns():x}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": api_version or obj.get("apiVersion"),
                "kind": kind or obj.get("kind"),
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "source": {"component": self.component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": type_,
            "reportingComponent": self.component,
            "reportingInstance": "",
        }
        key = (namespace, body["involvedObject"]["kind"], meta.get("name"), meta.get("uid"), type_, reason, message)
        task = asyncio.get_running_loop().create_task(self._write(key, body))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(self, key: tuple[Any, ...], body: dict[str, Any]) -> None:
        namespace = body["metadata"]["namespace"]
        async with self._lock:
            try:
                seen = self._recent.get(key)
                if seen is not None and time.monotonic() - seen[2] < self.AGGREGATE_SECONDS:
                    name, count = seen[0], seen[1] + 1
                    patch = {"count": count, "lastTimestamp": body["lastTimestamp"]}
                    self._recent[key] = (name, count, seen[2])
                    try:
                        await self.client.patch(Event, name, patch, namespace=namespace, patch_type=PatchType.MERGE)
                        return
                    except ApiError as err:
                        if not is_not_found(err):
                            raise
                await self.client.create(model(Event, body))
                self._recent[key] = (body["metadata"]["name"], 1, time.monotonic())
                self._recent.move_to_end(key)
                while len(self._recent) > self.CACHE_SIZE:
                    self._recent.popitem(last=False)
            except Exception as err:  # events are best effort, as in client-go
                log.debug("could not record event %s/%s: %s", body["reason"], body["involvedObject"]["name"], err)


class PodControl:
    """controller.RealPodControl: create Pods for `owner` (kind/apiVersion given) and delete them, with events."""

    def __init__(self, client: AsyncClient, recorder: EventRecorder, kind: str, api_version: str = "apps/v1"):
        self.client = client
        self.recorder = recorder
        self.kind = kind
        self.api_version = api_version

    def _event(self, owner: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(owner, type_, reason, message, kind=self.kind, api_version=self.api_version)

    async def create_pod(
        self, namespace: str, template: Obj, owner: Obj, controller_ref: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """Create one Pod from `template`, named `<owner>-<5 random chars>` by the apiserver; returns it."""
        pod = pod_from_template(template, (owner.get("metadata") or {}).get("name", ""), controller_ref)
        if not (pod["metadata"].get("labels")):
            raise ValueError("unable to create pods, no labels")
        pod["metadata"]["namespace"] = namespace
        try:
            created = await self.client.create(model(Pod, pod))
        except Exception as err:
            self._event(owner, "Warning", "FailedCreate", f"Error creating: {api_error_message(err)}")
            raise
        result: dict[str, Any] = created.to_dict()
        self._event(owner, "Normal", "SuccessfulCreate", f"Created pod: {result['metadata']['name']}")
        return result

    async def delete_pod(self, namespace: str, name: str, owner: Obj) -> None:
        """Delete a Pod; NotFound is raised unrecorded (already gone), other errors record FailedDelete."""
        try:
            await self.client.delete(Pod, name, namespace=namespace)
        except ApiError as err:
            if is_not_found(err):
                raise
            self._event(owner, "Warning", "FailedDelete", f"Error deleting: {api_error_message(err)}")
            raise
        self._event(owner, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")


class ClaimError(Exception):
    """Some adoptions or releases failed (the sync is retried)."""


async def _patch_owner_refs(client: AsyncClient, res: type, obj: Obj, refs: list[dict[str, Any]]) -> None:
    meta = obj.get("metadata") or {}
    patch = {"metadata": {"ownerReferences": refs or None, "resourceVersion": meta.get("resourceVersion")}}
    await client.patch(res, meta["name"], patch, namespace=meta.get("namespace"), patch_type=PatchType.MERGE)


async def claim(
    client: AsyncClient,
    res: type,
    owner: Obj,
    owner_ref: Mapping[str, Any],
    selector: Obj | None,
    objects: list[dict[str, Any]],
    can_adopt: Callable[[], Awaitable[bool]],
) -> list[dict[str, Any]]:
    """ControllerRefManager.Claim*: the objects `owner` controls after adopting matching orphans and releasing the rest.

    `can_adopt` is the fresh quorum read of the owner (called at most once, only if there is something to adopt).
    """
    owner_meta = owner.get("metadata") or {}
    owner_uid = owner_meta.get("uid")
    owner_deleting = bool(owner_meta.get("deletionTimestamp"))
    claimed: list[dict[str, Any]] = []
    errors: list[str] = []
    adopt_ok: bool | None = None
    for obj in objects:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        ref = controller_of(obj)
        refs = [dict(r) for r in meta.get("ownerReferences") or []]
        if ref is not None:
            if ref.get("uid") != owner_uid:
                continue  # another controller's
            if selector_matches(selector, labels):
                claimed.append(obj)
                continue
            if owner_deleting:
                continue
            try:  # release
                await _patch_owner_refs(client, res, obj, [r for r in refs if r.get("uid") != owner_uid])
            except ApiError as err:
                if not is_not_found(err):
                    errors.append(f"release {meta.get('name')}: {api_error_message(err)}")
            continue
        if owner_deleting or not selector_matches(selector, labels) or meta.get("deletionTimestamp"):
            continue
        if adopt_ok is None:
            adopt_ok = await can_adopt()
        if not adopt_ok:
            errors.append(f"can't adopt {meta.get('name')}: the owner is gone or being deleted")
            continue
        try:
            await _patch_owner_refs(client, res, obj, [*refs, dict(owner_ref)])
        except ApiError as err:
            if not is_not_found(err):
                errors.append(f"adopt {meta.get('name')}: {api_error_message(err)}")
            continue
        adopted = dict(obj)
        adopted["metadata"] = {**meta, "ownerReferences": [*refs, dict(owner_ref)]}
        claimed.append(adopted)
    if errors:
        raise ClaimError("; ".join(errors))
    return claimed
