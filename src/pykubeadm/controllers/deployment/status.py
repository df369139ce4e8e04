"""The Deployment's status and conditions (kube's deployment util + syncRolloutStatus), pure functions over dicts.

Used by the deployment controller: the status computed from the ReplicaSets, the Available condition
(MinimumReplicasAvailable / MinimumReplicasUnavailable), the Progressing condition (NewReplicaSetCreated,
FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded, DeploymentPaused/Resumed) with
kube's messages, ReplicaFailure copied from the ReplicaSets, and when a stuck rollout must be looked at again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from pykubeadm.controllers.deployment.util import MAX_INT32, max_unavailable, replicas
from pykubeadm.util.apitime import format_time, parse_time

__all__ = [
    "AVAILABLE_REASON",
    "calculate_status",
    "deployment_complete",
    "deployment_progressing",
    "deployment_timed_out",
    "get_condition",
    "has_progress_deadline",
    "new_condition",
    "remove_condition",
    "rollout_status",
    "set_condition",
    "stuck_requeue_after",
]

Obj = Mapping[str, Any]

# Progressing / Available reasons
NEW_RS_CREATED_REASON: Final = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON: Final = "FoundNewReplicaSet"
RS_UPDATED_REASON: Final = "ReplicaSetUpdated"
NEW_RS_AVAILABLE_REASON: Final = "NewReplicaSetAvailable"
TIMED_OUT_REASON: Final = "ProgressDeadlineExceeded"
FAILED_RS_CREATE_REASON: Final = "ReplicaSetCreateError"
PAUSED_REASON: Final = "DeploymentPaused"
RESUMED_REASON: Final = "DeploymentResumed"
AVAILABLE_REASON: Final = "MinimumReplicasAvailable"
UNAVAILABLE_REASON: Final = "MinimumReplicasUnavailable"

# --- conditions and status -------------------------------------------------------------------------------------------


def new_condition(type_: str, status: str, reason: str, message: str, now: datetime) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "lastUpdateTime": format_time(now),
        "lastTransitionTime": format_time(now),
        "reason": reason,
        "message": message,
    }


def get_condition(status: Obj, type_: str) -> dict[str, Any] | None:
    return next((dict(c) for c in status.get("conditions") or [] if c.get("type") == type_), None)


def remove_condition(status: dict[str, Any], type_: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != type_]


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> None:
    """SetDeploymentCondition: same status and reason → unchanged; same status → keep lastTransitionTime."""
    current = get_condition(status, cond["type"])
    if current is not None and current.get("status") == cond["status"] and current.get("reason") == cond["reason"]:
        return
    if current is not None and current.get("status") == cond["status"]:
        cond = {**cond, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status, cond["type"])
    status["conditions"].append(cond)


def _sum(rss: Iterable[Obj | None], field: str) -> int:
    return sum(int((rs.get("status") or {}).get(field) or 0) for rs in rss if rs is not None)


def calculate_status(all_rss: Sequence[Obj | None], new_rs: Obj | None, d: Obj, now: datetime) -> dict[str, Any]:
    """The Deployment's status from its ReplicaSets, with the Available condition."""
    available = _sum(all_rss, "availableReplicas")
    total_spec = sum(replicas(rs) for rs in all_rss if rs is not None)
    old = d.get("status") or {}
    status: dict[str, Any] = {
        "observedGeneration": (d.get("metadata") or {}).get("generation") or 0,
        "replicas": _sum(all_rss, "replicas"),
        "updatedReplicas": _sum([new_rs], "replicas"),
        "readyReplicas": _sum(all_rss, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": max(0, total_spec - available),
        "conditions": [dict(c) for c in old.get("conditions") or []],
    }
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if available >= replicas(d) - max_unavailable(d):
        cond = new_condition("Available", "True", AVAILABLE_REASON, "Deployment has minimum availability.", now)
    else:
        cond = new_condition(
            "Available", "False", UNAVAILABLE_REASON, "Deployment does not have minimum availability.", now
        )
    set_condition(status, cond)
    return status


def _progress_deadline(d: Obj) -> int | None:
    """spec.progressDeadlineSeconds, None when unset or MaxInt32 (no deadline)."""
    value = (d.get("spec") or {}).get("progressDeadlineSeconds")
    if value is None or int(value) == MAX_INT32:
        return None
    return int(value)


def has_progress_deadline(d: Obj) -> bool:
    return _progress_deadline(d) is not None


def deployment_complete(d: Obj, status: Obj) -> bool:
    want = replicas(d)
    return (
        int(status.get("updatedReplicas") or 0) == want
        and int(status.get("replicas") or 0) == want
        and int(status.get("availableReplicas") or 0) == want
        and int(status.get("observedGeneration") or 0) >= int((d.get("metadata") or {}).get("generation") or 0)
    )


def deployment_progressing(d: Obj, new: Obj) -> bool:
    old = d.get("status") or {}

    def get(s: Obj, f: str) -> int:
        return int(s.get(f) or 0)

    old_old = get(old, "replicas") - get(old, "updatedReplicas")
    new_old = get(new, "replicas") - get(new, "updatedReplicas")
    return (
        get(new, "updatedReplicas") > get(old, "updatedReplicas")
        or new_old < old_old
        or get(new, "readyReplicas") > get(old, "readyReplicas")
        or get(new, "availableReplicas") > get(old, "availableReplicas")
    )


def deployment_timed_out(d: Obj, status: Obj, now: datetime) -> bool:
    deadline = _progress_deadline(d)
    if deadline is None:
        return False
    cond = get_condition(status, "Progressing")
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if cond.get("reason") == TIMED_OUT_REASON:
        return True
    since = parse_time(cond.get("lastUpdateTime"))
    if since is None:
        return False
    return (now - since).total_seconds() > deadline


def replica_failure(all_rss: Sequence[Obj | None], new_rs: Obj | None) -> dict[str, Any] | None:
    """The first ReplicaFailure condition of the new, then the other ReplicaSets, as a Deployment condition."""
    for rs in [new_rs, *all_rss]:
        for cond in ((rs or {}).get("status") or {}).get("conditions") or []:
            if cond.get("type") == "ReplicaFailure":
                return {
                    "type": "ReplicaFailure",
                    "status": cond.get("status"),
                    "lastUpdateTime": cond.get("lastTransitionTime"),
                    "lastTransitionTime": cond.get("lastTransitionTime"),
                    "reason": cond.get("reason"),
                    "message": cond.get("message"),
                }
    return None


def rollout_status(d: Obj, all_rss: Sequence[Obj | None], new_rs: Obj | None, now: datetime) -> dict[str, Any]:
    """syncRolloutStatus: the new status with Progressing advanced (progress, completion, or deadline exceeded)."""
    status = calculate_status(all_rss, new_rs, d, now)
    has_deadline = has_progress_deadline(d)
    if not has_deadline:
        remove_condition(status, "Progressing")
    current = get_condition(d.get("status") or {}, "Progressing")
    complete = (
        status["replicas"] == status["updatedReplicas"]
        and current is not None
        and current.get("reason") == NEW_RS_AVAILABLE_REASON
    )
    name = ((new_rs or d).get("metadata") or {}).get("name")
    subject = f'ReplicaSet "{name}"' if new_rs is not None else f'Deployment "{name}"'
    if has_deadline and not complete:
        if deployment_complete(d, status):
            message = f"{subject} has successfully progressed."
            set_condition(status, new_condition("Progressing", "True", NEW_RS_AVAILABLE_REASON, message, now))
        elif deployment_progressing(d, status):
            cond = new_condition("Progressing", "True", RS_UPDATED_REASON, f"{subject} is progressing.", now)
            if current is not None:
                if current.get("status") == "True":
                    cond["lastTransitionTime"] = current.get("lastTransitionTime")
                remove_condition(status, "Progressing")  # so lastUpdateTime moves on
            set_condition(status, cond)
        elif deployment_timed_out(d, status, now):
            message = f"{subject} has timed out progressing."
            set_condition(status, new_condition("Progressing", "False", TIMED_OUT_REASON, message, now))
    failure = replica_failure(all_rss, new_rs)
    if failure is not None:
        set_condition(status, failure)
    else:
        remove_condition(status, "ReplicaFailure")
    return status


def stuck_requeue_after(d: Obj, status: Obj, now: datetime) -> float | None:
    """Seconds until the progress deadline of an unchanged, unfinished rollout passes (None: no need to look)."""
    current = get_condition(d.get("status") or {}, "Progressing")
    if not has_progress_deadline(d) or current is None:
        return None
    if deployment_complete(d, status) or current.get("reason") == TIMED_OUT_REASON:
        return None
    since = parse_time(current.get("lastUpdateTime"))
    if since is None:
        return None
    return (since - now).total_seconds() + int((d.get("spec") or {}).get("progressDeadlineSeconds") or 0)
