"""Pure Deployment rollout math (kube's pkg/controller/deployment/util), over API objects as dicts.

Used by the deployment controller (controller.py): maxSurge/maxUnavailable with kube's rounding, the revision and
replica annotations, finding the new ReplicaSet, how many Pods each rolling-update step adds or removes, proportional
scaling and revision-history cleanup. Conditions and status are in status.py.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

from pykubeadm.controllers.controllerutil import POD_TEMPLATE_HASH_LABEL, scaled_value

__all__ = [
    "DESIRED_REPLICAS_ANNOTATION",
    "MAX_REPLICAS_ANNOTATION",
    "REVISION_ANNOTATION",
    "REVISION_HISTORY_ANNOTATION",
    "cleanup_unhealthy_steps",
    "equal_ignore_hash",
    "find_active_or_latest",
    "find_new_rs",
    "is_saturated",
    "max_surge",
    "max_unavailable",
    "new_rs_new_replicas",
    "proportional_sizes",
    "replicas",
    "revision",
    "rss_to_cleanup",
    "scale_down_old_steps",
    "set_new_rs_annotations",
    "set_replicas_annotations",
]

Obj = Mapping[str, Any]
#: a ReplicaSet as the caller holds it (functions that pick ReplicaSets return the caller's own objects)
RS = TypeVar("RS", bound=Mapping[str, Any])

REVISION_ANNOTATION: Final = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION: Final = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION: Final = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION: Final = "deployment.kubernetes.io/max-replicas"
ROLLBACK_TO_ANNOTATION: Final = "deprecated.deployment.rollback.to"
#: annotations of a Deployment never copied onto its ReplicaSets
_SKIPPED_ANNOTATIONS: Final = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION_ANNOTATION,
        REVISION_HISTORY_ANNOTATION,
        DESIRED_REPLICAS_ANNOTATION,
        MAX_REPLICAS_ANNOTATION,
        ROLLBACK_TO_ANNOTATION,
    }
)
#: --deployment-controller's limit on the revision-history annotation length
REVISION_HISTORY_LIMIT_CHARS: Final = 2000

MAX_INT32: Final = 2**31 - 1


def replicas(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _annotations(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def revision(rs: Obj) -> int:
    try:
        return int(_annotations(rs).get(REVISION_ANNOTATION, "0"))
    except ValueError:
        return 0


def creation_key(rs: Obj) -> tuple[str, str]:
    meta = rs.get("metadata") or {}
    return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")


# --- surge and unavailability ----------------------------------------------------------------------------------------


def is_rolling_update(d: Obj) -> bool:
    return ((d.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"


def _fenceposts(d: Obj) -> tuple[int, int]:
    ru = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    desired = replicas(d)
    surge = scaled_value(ru.get("maxSurge", "25%"), desired, True)
    unavailable = scaled_value(ru.get("maxUnavailable", "25%"), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1  # the rollout could not make progress otherwise
    return surge, unavailable


def max_surge(d: Obj) -> int:
    return _fenceposts(d)[0] if is_rolling_update(d) else 0


def max_unavailable(d: Obj) -> int:
    if not is_rolling_update(d) or replicas(d) == 0:
        return 0
    return min(_fenceposts(d)[1], replicas(d))


# --- finding ReplicaSets ---------------------------------------------------------------------------------------------


def _without_hash(template: Obj) -> dict[str, Any]:
    result = copy.deepcopy(dict(template))
    labels = (result.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(POD_TEMPLATE_HASH_LABEL, None)
        if not labels:
            result["metadata"].pop("labels")
    return result


def equal_ignore_hash(a: Obj, b: Obj) -> bool:
    """Two Pod templates equal once the pod-template-hash label is dropped from both."""
    return _without_hash(a) == _without_hash(b)


def find_new_rs(d: Obj, rss: Sequence[RS]) -> RS | None:
    """The oldest ReplicaSet whose template equals the Deployment's (ignoring the hash label)."""
    template = (d.get("spec") or {}).get("template") or {}
    for rs in sorted(rss, key=creation_key):
        if equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template):
            return rs
    return None


def filter_active(rss: Iterable[RS | None]) -> list[RS]:
    return [rs for rs in rss if rs is not None and replicas(rs) > 0]


def find_active_or_latest(new_rs: RS | None, old_rss: Sequence[RS]) -> RS | None:
    """The only active ReplicaSet, or the newest one if none is active; None while several are active."""
    if new_rs is None and not old_rss:
        return None
    newest_first = sorted(old_rss, key=creation_key, reverse=True)
    active = filter_active([*newest_first, new_rs])
    if not active:
        return new_rs if new_rs is not None else newest_first[0]
    return active[0] if len(active) == 1 else None


# --- annotations -----------------------------------------------------------------------------------------------------


def set_replicas_annotations(rs: dict[str, Any], desired: int, max_replicas: int) -> bool:
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS_ANNOTATION, str(desired)), (MAX_REPLICAS_ANNOTATION, str(max_replicas))):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Obj, desired: int, max_replicas: int) -> bool:
    annotations = _annotations(rs)
    return annotations.get(DESIRED_REPLICAS_ANNOTATION) != str(desired) or annotations.get(
        MAX_REPLICAS_ANNOTATION
    ) != str(max_replicas)


def set_new_rs_annotations(
    d: Obj, rs: dict[str, Any], new_revision: int, exists: bool, limit_chars: int = REVISION_HISTORY_LIMIT_CHARS
) -> bool:
    """Copy the Deployment's annotations, raise the revision (recording the old one in revision-history) and, for a
    ReplicaSet being created, the desired/max replicas. True if anything changed."""
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in _annotations(d).items():
        if key not in _SKIPPED_ANNOTATIONS and annotations.get(key) != value:
            annotations[key] = value
            changed = True
    old = annotations.get(REVISION_ANNOTATION, "")
    try:
        old_int = int(old) if old else 0
    except ValueError:
        old_int = 0
    if old_int < new_revision:
        annotations[REVISION_ANNOTATION] = str(new_revision)
        changed = True
        if old:
            history = [h for h in annotations.get(REVISION_HISTORY_ANNOTATION, "").split(",") if h]
            history.append(old)
            while len(",".join(history)) > limit_chars and len(history) > 1:
                history.pop(0)
            annotations[REVISION_HISTORY_ANNOTATION] = ",".join(history)
    if not exists and set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
        changed = True
    return changed


# --- scaling ---------------------------------------------------------------------------------------------------------


def new_rs_new_replicas(d: Obj, all_rss: Iterable[Obj | None], new_rs: Obj) -> int:
    """How many replicas the new ReplicaSet may have now (NewRSNewReplicas)."""
    if not is_rolling_update(d):
        return replicas(d)
    current = sum(replicas(rs) for rs in all_rss if rs is not None)
    max_total = replicas(d) + max_surge(d)
    if current >= max_total:
        return replicas(new_rs)
    return replicas(new_rs) + min(max_total - current, replicas(d) - replicas(new_rs))


def is_saturated(d: Obj, rs: Obj | None) -> bool:
    if rs is None:
        return False
    try:
        desired = int(_annotations(rs).get(DESIRED_REPLICAS_ANNOTATION, ""))
    except ValueError:
        return False
    want = replicas(d)
    available = int((rs.get("status") or {}).get("availableReplicas") or 0)
    return replicas(rs) == want and desired == want and available == want


def _fraction(rs: Obj, d: Obj) -> int:
    if replicas(d) == 0:
        return -replicas(rs)
    deployment_replicas = replicas(d) + max_surge(d)
    try:
        annotated = int(_annotations(rs).get(MAX_REPLICAS_ANNOTATION, ""))
    except ValueError:
        annotated = int((d.get("status") or {}).get("replicas") or 0)
    if annotated == 0:
        return 0
    size = replicas(rs) * deployment_replicas / annotated
    rounded = int(size + 0.5) if size >= 0 else -int(-size + 0.5)  # Go's math.Round: half away from zero
    return rounded - replicas(rs)


def _proportion(rs: Obj, d: Obj, to_add: int, added: int) -> int:
    if replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction, allowed = _fraction(rs, d), to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def proportional_sizes(d: Obj, active_rss: Sequence[RS]) -> tuple[list[tuple[RS, int]], str]:
    """Proportional scaling of a rolling Deployment's active ReplicaSets: [(rs, new size)] and "up"/"down"/""."""
    allowed = replicas(d) + max_surge(d) if replicas(d) > 0 else 0
    to_add = allowed - sum(replicas(rs) for rs in active_rss)
    ordered = list(active_rss)
    operation = ""
    if to_add > 0:
        ordered.sort(key=creation_key, reverse=True)  # newer first among equals …
        ordered.sort(key=replicas, reverse=True)  # … larger first
        operation = "up"
    elif to_add < 0:
        ordered.sort(key=creation_key)  # older first among equals …
        ordered.sort(key=replicas, reverse=True)  # … larger first
        operation = "down"
    added = 0
    sizes: list[int] = []
    for rs in ordered:
        if to_add != 0:
            proportion = _proportion(rs, d, to_add, added)
            sizes.append(replicas(rs) + proportion)
            added += proportion
        else:
            sizes.append(replicas(rs))
    if ordered and to_add != 0:
        sizes[0] = max(0, sizes[0] + to_add - added)  # leftovers go to the largest
    return list(zip(ordered, sizes, strict=True)), operation


def cleanup_unhealthy_steps(old_rss: Sequence[RS], max_cleanup: int) -> list[tuple[RS, int]]:
    """Scale down the old ReplicaSets' unavailable Pods first, oldest ReplicaSet first: [(rs, new size)].

    A ReplicaSet whose status still shows more available Pods than its (just lowered) spec is an error, as in kube:
    the sync is retried once the ReplicaSet controller has caught up, never scaling an old ReplicaSet up."""
    steps, total = [], 0
    for rs in sorted(old_rss, key=creation_key):
        if total >= max_cleanup:
            break
        size = replicas(rs)
        available = int((rs.get("status") or {}).get("availableReplicas") or 0)
        if size == 0 or size == available:
            continue
        count = min(max_cleanup - total, size - available)
        if count < 0:
            meta = rs.get("metadata") or {}
            raise ValueError(
                "when cleaning up unhealthy replicas, got invalid request to scale down "
                f"{meta.get('namespace')}/{meta.get('name')} {size} -> {size - count}"
            )
        steps.append((rs, size - count))
        total += count
    return steps


def scale_down_old_steps(all_rss: Sequence[Obj], old_rss: Sequence[RS], d: Obj) -> list[tuple[RS, int]]:
    """scaleDownOldReplicaSetsForRollingUpdate: remove what keeps availability ≥ replicas - maxUnavailable."""
    min_available = replicas(d) - max_unavailable(d)
    available = sum(int((rs.get("status") or {}).get("availableReplicas") or 0) for rs in all_rss)
    if available <= min_available:
        return []
    budget, total, steps = available - min_available, 0, []
    for rs in sorted(old_rss, key=creation_key):
        if total >= budget:
            break
        if replicas(rs) == 0:
            continue
        count = min(replicas(rs), budget - total)
        steps.append((rs, replicas(rs) - count))
        total += count
    return steps


def rss_to_cleanup(old_rss: Sequence[RS], limit: int) -> list[RS]:
    """Old ReplicaSets beyond revisionHistoryLimit that are empty and settled, lowest revision first."""
    alive = [rs for rs in old_rss if not (rs.get("metadata") or {}).get("deletionTimestamp")]
    diff = len(alive) - limit
    if diff <= 0:
        return []
    doomed = []
    for rs in sorted(alive, key=lambda r: (revision(r), creation_key(r)))[:diff]:
        status, meta = rs.get("status") or {}, rs.get("metadata") or {}
        if int(status.get("replicas") or 0) or replicas(rs):
            continue
        if int(meta.get("generation") or 0) > int(status.get("observedGeneration") or 0):
            continue
        doomed.append(rs)
    return doomed
