"""Pure pieces of the job controller: completion indexes, pod failure/back-off accounting, conditions, Pod templates.

Used by controller.py. Follows kube 1.33's job controller: Pods carry the `batch.kubernetes.io/job-tracking` finalizer until
the controller has counted them (`status.uncountedTerminatedPods`); terminal conditions are preceded by
SuccessCriteriaMet / FailureTarget and written once no Pod is left running; a new Pod after failures waits
10 s · 2^(failures−1), at most 6 min, from the last failure.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from pykubeadm.util.apitime import format_time, parse_time

__all__ = [
    "BACKOFF_BASE",
    "BACKOFF_MAX",
    "COMPLETION_INDEX",
    "TRACKING_FINALIZER",
    "backoff_limit",
    "backoff_remaining",
    "format_indexes",
    "is_pod_failed",
    "match_pod_failure_policy",
    "new_condition",
    "parse_indexes",
    "pod_for_job",
    "pod_index",
    "set_condition",
]

#: Finalizer the controller puts on its Pods until it has counted them.
TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"
#: Annotation and label with an Indexed Job Pod's completion index.
COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
#: The env var an Indexed Job's containers read their index from.
COMPLETION_INDEX_ENV: Final = "JOB_COMPLETION_INDEX"
#: DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff.
BACKOFF_BASE: Final = timedelta(seconds=10)
BACKOFF_MAX: Final = timedelta(minutes=6)


# --- completion indexes ----------------------------------------------------------------------------------------------


def parse_indexes(text: str | None, completions: int | None = None) -> set[int]:
    """`status.completedIndexes` ("1,3-5,7") → {1, 3, 4, 5, 7}; indexes ≥ completions are dropped."""
    out: set[int] = set()
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        first, _, last = part.partition("-")
        try:
            lo, hi = int(first), int(last or first)
        except ValueError:
            continue
        out.update(range(lo, hi + 1))
    return {i for i in out if completions is None or i < completions}


def format_indexes(indexes: Iterable[int]) -> str:
    """{1, 3, 4, 5, 7} → "1,3-5,7" (consecutive runs collapse to ranges)."""
    runs: list[list[int]] = []
    for i in sorted(set(indexes)):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def pod_index(pod: Mapping[str, Any]) -> int | None:
    """The completion index of an Indexed Job's Pod (annotation), None if missing or invalid."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(COMPLETION_INDEX)
    try:
        index = int(value) if value is not None else -1
    except ValueError:
        return None
    return index if index >= 0 else None


# --- failures and back-off -------------------------------------------------------------------------------------------


def is_pod_failed(pod: Mapping[str, Any], job_spec: Mapping[str, Any]) -> bool:
    """isPodFailed: phase Failed, or (unless podReplacementPolicy is Failed) deleted before it succeeded."""
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Failed":
        return True
    if job_spec.get("podReplacementPolicy") == "Failed" or job_spec.get("podFailurePolicy") is not None:
        return False
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) and phase != "Succeeded"


def _exit_code_matches(requirement: Mapping[str, Any], pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    status = pod.get("status") or {}
    values = set(requirement.get("values") or [])
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        term = (cs.get("state") or {}).get("terminated")
        if not term or (requirement.get("containerName") and requirement["containerName"] != cs.get("name")):
            continue
        code = int(term.get("exitCode") or 0)
        if code != 0 and (code in values) == (requirement.get("operator") == "In"):
            return cs
    return None


def match_pod_failure_policy(policy: Mapping[str, Any], pod: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(action of the first matching rule or None, the FailJob message) for a failed Pod (matchPodFailurePolicy)."""
    meta = pod.get("metadata") or {}
    who = f"{meta.get('namespace')}/{meta.get('name')}"
    conditions = (pod.get("status") or {}).get("conditions") or []
    for index, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        if rule.get("onExitCodes"):
            cs = _exit_code_matches(rule["onExitCodes"], pod)
            if cs is not None:
                code = cs["state"]["terminated"].get("exitCode")
                return action, (
                    f"Container {cs.get('name')} for pod {who} failed with exit code {code} "
                    f"matching {action} rule at index {index}"
                )
        for pattern in rule.get("onPodConditions") or []:
            for cond in conditions:
                if cond.get("type") == pattern.get("type") and cond.get("status") == pattern.get("status", "True"):
                    return action, f"Pod {who} has condition {cond.get('type')} matching {action} rule at index {index}"
    return None, None


def finish_time(pod: Mapping[str, Any], fallback: datetime) -> datetime:
    """When a failed Pod finished: its latest container termination, else its deletion time, else `fallback`."""
    latest: datetime | None = None
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated") or {}
        t = parse_time(term.get("finishedAt"))
        if t is not None and (latest is None or t > latest):
            latest = t
    return latest or parse_time((pod.get("metadata") or {}).get("deletionTimestamp")) or fallback


def backoff_remaining(failures: int, last_failure: datetime | None, now: datetime) -> timedelta:
    """How long a replacement Pod must still wait after `failures` consecutive failures, the last at `last_failure`."""
    if failures <= 0 or last_failure is None:
        return timedelta(0)
    delay = min(BACKOFF_BASE * (2 ** (failures - 1)), BACKOFF_MAX)
    return max(timedelta(0), last_failure + delay - now)


def _int_field(spec: Mapping[str, Any], name: str, default: int) -> int:
    """spec[name] as an int, `default` when unset (0 is a value, not unset)."""
    value = spec.get(name)
    return default if value is None else int(value)


def backoff_limit(spec: Mapping[str, Any]) -> int:
    """spec.backoffLimit, 6 when unset."""
    return _int_field(spec, "backoffLimit", 6)


def restarts_exceed_limit(spec: Mapping[str, Any], active: Sequence[Mapping[str, Any]]) -> bool:
    """pastBackoffLimitOnFailure: with restartPolicy OnFailure, container restarts of running or pending Pods reach
    the back-off limit (any restart when it is 0)."""
    template_spec = (spec.get("template") or {}).get("spec") or {}
    if template_spec.get("restartPolicy") != "OnFailure":
        return False
    restarts = 0
    for pod in active:
        status = pod.get("status") or {}
        if status.get("phase") not in ("Running", "Pending"):
            continue
        for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
    limit = backoff_limit(spec)
    return restarts > 0 if limit == 0 else restarts >= limit


# --- conditions ------------------------------------------------------------------------------------------------------


def new_condition(ctype: str, reason: str, message: str, now: datetime, status: str = "True") -> dict[str, Any]:
    t = format_time(now)
    return {
        "type": ctype,
        "status": status,
        "lastProbeTime": t,
        "lastTransitionTime": t,
        "reason": reason,
        "message": message,
    }


def find_condition(status: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == ctype), None)


def has_condition(status: Mapping[str, Any], ctype: str) -> bool:
    cond = find_condition(status, ctype)
    return cond is not None and cond.get("status") == "True"


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> bool:
    """Add or update `cond` in status.conditions; False when nothing changed (same status, reason and message)."""
    conds = list(status.get("conditions") or [])
    for i, old in enumerate(conds):
        if old.get("type") != cond["type"]:
            continue
        if (old.get("status"), old.get("reason"), old.get("message")) == (
            cond["status"],
            cond["reason"],
            cond["message"],
        ):
            return False
        if old.get("status") == cond["status"]:
            cond = {**cond, "lastTransitionTime": old.get("lastTransitionTime", cond["lastTransitionTime"])}
        conds[i] = cond
        status["conditions"] = conds
        return True
    conds.append(cond)
    status["conditions"] = conds
    return True


# --- pods ------------------------------------------------------------------------------------------------------------


def pod_for_job(job: Mapping[str, Any], index: int | None) -> dict[str, Any]:
    """The Pod the controller creates: the template with the tracking finalizer, an owner reference, and for an
    Indexed Job the index annotation, label, env var and hostname (`generateName` `<job>-` or `<job>-<index>-`)."""
    meta = job["metadata"]
    template = (job.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    pod_meta: dict[str, Any] = {
        "generateName": f"{meta['name']}-" if index is None else f"{meta['name']}-{index}-",
        "namespace": meta.get("namespace"),
        "labels": dict(tmeta.get("labels") or {}),
        "annotations": dict(tmeta.get("annotations") or {}),
        "finalizers": [*(tmeta.get("finalizers") or []), TRACKING_FINALIZER],
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    spec = copy.deepcopy(template.get("spec") or {})
    if index is not None:
        pod_meta["annotations"][COMPLETION_INDEX] = str(index)
        pod_meta["labels"][COMPLETION_INDEX] = str(index)
        if not spec.get("hostname"):
            spec["hostname"] = f"{meta['name']}-{index}"
        env_var = {
            "name": COMPLETION_INDEX_ENV,
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": f"metadata.labels['{COMPLETION_INDEX}']"}},
        }
        for key in ("initContainers", "containers"):
            for container in spec.get(key) or []:
                env = [e for e in container.get("env") or [] if e.get("name") != COMPLETION_INDEX_ENV]
                container["env"] = [*env, env_var]
    if not pod_meta["annotations"]:
        del pod_meta["annotations"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def wanted_active(spec: Mapping[str, Any], succeeded: int, indexed_pending: int | None) -> int:
    """How many Pods should be running: parallelism, capped by the completions still missing."""
    parallelism = _int_field(spec, "parallelism", 1)
    completions = spec.get("completions")
    if indexed_pending is not None:
        return max(0, min(parallelism, indexed_pending))
    if completions is None:
        return 0 if succeeded > 0 else parallelism
    return max(0, min(parallelism, int(completions) - succeeded))


def past_deadline(spec: Mapping[str, Any], status: Mapping[str, Any], now: datetime) -> tuple[bool, float | None]:
    """(activeDeadlineSeconds exceeded, seconds left when not)."""
    deadline = spec.get("activeDeadlineSeconds")
    start = parse_time(status.get("startTime"))
    if deadline is None or start is None:
        return False, None
    left = (start + timedelta(seconds=int(deadline)) - now).total_seconds()
    return left <= 0, (left if left > 0 else None)
