"""How a DELETE treats one object (kube's generic store Delete with rest.BeforeDelete and the garbage collector's
finalizers); pure functions called by `Store.delete`, which does the reading and writing.

`plan_deletion` mutates a copy of the live object and answers:
- "pending": a graceful deletion is already under way and the request does not shorten it: nothing changes.
- "keep": the object stays, marked (deletionTimestamp; deletionGracePeriodSeconds; the GC finalizers the options ask
  for: `orphan` for propagationPolicy=Orphan / orphanDependents=true, `foregroundDeletion` for Foreground); written
  if it changed. It disappears on the update that leaves it without finalizers (see `delete_on_update`), or, for a
  graceful deletion (Pods on a node), on a later DELETE with gracePeriodSeconds=0.
- "delete": remove it now.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.registry.base import Obj, Strategy
from pykubeadm.util.apitime import format_time, parse_time

__all__ = [
    "FOREGROUND_FINALIZER",
    "ORPHAN_FINALIZER",
    "check_preconditions",
    "delete_on_update",
    "gc_finalizers",
    "normalize_options",
    "plan_deletion",
]

#: metav1.FinalizerOrphanDependents / FinalizerDeleteDependents: the garbage collector removes them when done.
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
_GC_FINALIZERS = (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)


def normalize_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """A negative gracePeriodSeconds means 1s on the delete path."""
    opts = dict(options or {})
    grace = opts.get("gracePeriodSeconds")
    if grace is not None and int(grace) < 0:
        opts["gracePeriodSeconds"] = 1
    return opts


def check_preconditions(plural: str, group: str, obj: Obj, pre: dict[str, Any]) -> None:
    """DeleteOptions.preconditions (uid, resourceVersion): 409 Conflict with kube's message on a mismatch."""
    meta = obj["metadata"]
    name = meta.get("name", "")
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        why = f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}"
        raise st.conflict(plural, group, name, why)
    if pre.get("resourceVersion") and str(pre["resourceVersion"]) != meta.get("resourceVersion"):
        why = (
            f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
            f"ResourceVersion in object meta: {meta.get('resourceVersion')}"
        )
        raise st.conflict(plural, group, name, why)


def _first_gc_finalizer(finalizers: list[str]) -> str | None:
    return next((f for f in finalizers if f in _GC_FINALIZERS), None)


def gc_finalizers(default_policy: str, finalizers: list[str], options: dict[str, Any]) -> list[str]:
    """deletionFinalizersForGarbageCollection: the object's finalizers after this DELETE. An explicit option wins,
    then a GC finalizer already on the object, then the kind's default policy ("OrphanDependents" orphans;
    "DeleteDependents" deletes in the background, which needs no finalizer; "Unsupported" never adds any)."""
    if default_policy == "Unsupported":
        return finalizers
    orphan_opt, policy = options.get("orphanDependents"), options.get("propagationPolicy") or None
    existing = _first_gc_finalizer(finalizers)
    if orphan_opt is not None:
        orphan, foreground = bool(orphan_opt), False
    elif policy in ("Orphan", "Background", "Foreground"):
        orphan, foreground = policy == "Orphan", policy == "Foreground"
    elif existing is not None:
        orphan, foreground = existing == ORPHAN_FINALIZER, existing == FOREGROUND_FINALIZER
    else:
        orphan, foreground = default_policy == "OrphanDependents", False
    new = [f for f in finalizers if f not in _GC_FINALIZERS]
    new += [ORPHAN_FINALIZER] * orphan + [FOREGROUND_FINALIZER] * foreground
    return finalizers if set(new) == set(finalizers) else new


def _bump_generation(meta: Obj) -> None:
    if int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1


def plan_deletion(strategy: Strategy, obj: Obj, options: dict[str, Any], now: dt.datetime | None = None) -> str:
    """Mark `obj` (a copy of the live object) for this DELETE and say what to do: "pending", "keep" or "delete"."""
    now = now or dt.datetime.now(dt.UTC)
    meta = obj["metadata"]
    graceful = False
    if meta.get("deletionTimestamp"):
        period = int(meta.get("deletionGracePeriodSeconds") or 0)
        if period > 0:  # a graceful deletion is under way: only a shorter grace period changes it
            grace = options.get("gracePeriodSeconds")
            if grace is None or int(grace) >= period:
                return "pending"
            started = (parse_time(meta["deletionTimestamp"]) or now) - dt.timedelta(seconds=period)
            meta["deletionTimestamp"] = format_time(started + dt.timedelta(seconds=int(grace)))
            meta["deletionGracePeriodSeconds"] = int(grace)
            graceful = int(grace) > 0
    elif strategy.graceful_delete(obj, options):
        period = int(meta.get("deletionGracePeriodSeconds") or 0)
        if period > 0:
            meta["deletionTimestamp"] = format_time(now + dt.timedelta(seconds=period))
            _bump_generation(meta)
            graceful = True
        else:
            meta.pop("deletionGracePeriodSeconds", None)
    finalizers = list(meta.get("finalizers") or [])
    new = gc_finalizers(strategy.default_gc_policy, finalizers, options)
    if new != finalizers:
        if new:
            meta["finalizers"] = new
        else:
            meta.pop("finalizers", None)
    if strategy.has_finalizers(obj):
        if not graceful:  # markAsDeleting
            if not meta.get("deletionTimestamp"):
                _bump_generation(meta)
                meta["deletionTimestamp"] = format_time(now)
            meta["deletionGracePeriodSeconds"] = 0
        strategy.prepare_for_delete(obj)
        return "keep"
    if graceful:
        strategy.prepare_for_delete(obj)
        return "keep"
    return "delete"


def delete_on_update(strategy: Strategy, new: Obj, old: Obj) -> bool:
    """ShouldDeleteDuringUpdate: an update removes the object when it was marked for deletion without a pending grace
    period and the new state has no finalizers left."""
    ometa = old["metadata"]
    if not ometa.get("deletionTimestamp") or int(ometa.get("deletionGracePeriodSeconds") or 0) > 0:
        return False
    return not strategy.has_finalizers(new)
