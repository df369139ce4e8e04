"""ControllerRevision history shared by controllers that version a Pod template (daemonset; statefulset may reuse it).

As kube's pkg/controller/history and the DaemonSet controller's constructHistory/cleanupHistory: a revision stores the
owner's template as the patch `{"spec": {"template": {..., "$patch": "replace"}}}` (what `kubectl rollout undo`
applies), is named `<owner>-<hash>`, labelled with the template's labels plus `controller-revision-hash`, and numbered
one above the highest older revision. A name clash with different data is a hash collision: the owner's
`status.collisionCount` goes up (through `on_collision`) and the sync retries with a new hash.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from lightkube import AsyncClient
from lightkube.resources.apps_v1 import ControllerRevision

from pykubeadm.client import ApiError, is_already_exists, is_not_found
from pykubeadm.controllers.controllerutil import CONTROLLER_REVISION_HASH_LABEL, compute_hash, new_controller_ref
from pykubeadm.controllers.controllerutil_api import model
from pykubeadm.controllers.runtime import TemporaryError

__all__ = ["current_revision", "prune_revisions", "revision_name", "template_patch"]

Obj = dict[str, Any]


def template_patch(owner: Mapping[str, Any]) -> Obj:
    """The revision data of an owner: its Pod template as a replacing strategic-merge patch."""
    template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def revision_name(prefix: str, hash_: str) -> str:
    """ControllerRevisionName: `<prefix>-<hash>`, the prefix cut to 223 characters."""
    return f"{prefix[:223]}-{hash_}"


def _number(rev: Mapping[str, Any]) -> int:
    return int(rev.get("revision") or 0)


async def current_revision(
    client: AsyncClient,
    owner: Obj,
    owner_kind: str,
    revisions: list[Obj],
    on_collision: Callable[[int], Awaitable[None]],
    api_version: str = "apps/v1",
) -> tuple[Obj, list[Obj]]:
    """(the revision of the owner's current template — created or renumbered as needed, the older revisions).

    `revisions` are the ControllerRevisions the owner controls; `on_collision(new_count)` stores a raised
    collisionCount (then TemporaryError is raised)."""
    patch = template_patch(owner)
    matching = sorted((r for r in revisions if r.get("data") == patch), key=_number)
    cur = matching[-1] if matching else None
    old = [r for r in revisions if r is not cur]
    next_number = max((_number(r) for r in old), default=0) + 1
    if cur is None:
        return await _snapshot(client, owner, owner_kind, patch, next_number, on_collision, api_version), old
    if _number(cur) < next_number:
        cur = copy.deepcopy(cur)
        cur["revision"] = next_number
        try:
            cur = (await client.replace(model(ControllerRevision, cur))).to_dict()
        except ApiError as err:
            raise TemporaryError(f"updating revision {cur['metadata']['name']}: {err}") from err
    return cur, old


async def _snapshot(
    client: AsyncClient,
    owner: Obj,
    owner_kind: str,
    patch: Obj,
    number: int,
    on_collision: Callable[[int], Awaitable[None]],
    api_version: str,
) -> Obj:
    meta, spec = owner["metadata"], owner.get("spec") or {}
    collisions = (owner.get("status") or {}).get("collisionCount")
    hash_ = compute_hash(spec.get("template") or {}, collisions)
    labels = dict(((spec.get("template") or {}).get("metadata") or {}).get("labels") or {})
    labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": revision_name(meta["name"], hash_),
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [new_controller_ref(owner, api_version, owner_kind)],
        },
        "data": patch,
        "revision": number,
    }
    try:
        return (await client.create(model(ControllerRevision, body))).to_dict()
    except ApiError as err:
        if not is_already_exists(err):
            raise
    found = (await client.get(ControllerRevision, body["metadata"]["name"], namespace=meta["namespace"])).to_dict()
    if found.get("data") == patch:
        return found
    await on_collision(int(collisions or 0) + 1)
    raise TemporaryError(f"hash collision: revision {body['metadata']['name']} holds another template")


async def prune_revisions(client: AsyncClient, old: list[Obj], limit: int, live_hashes: Iterable[str | None]) -> None:
    """Delete the oldest revisions beyond `limit`, never one a live Pod still carries (cleanupHistory)."""
    to_kill = len(old) - limit
    live = set(live_hashes)
    for rev in sorted(old, key=_number):
        if to_kill <= 0:
            return
        if (rev["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) in live:
            continue
        try:
            await client.delete(ControllerRevision, rev["metadata"]["name"], namespace=rev["metadata"]["namespace"])
        except ApiError as err:
            if not is_not_found(err):
                raise
        to_kill -= 1
