"""Pure helpers shared by the workload controllers (replicaset, deployment, daemonset; job may reuse them).

The pieces of kube-controller-manager's `pkg/controller/controller_utils.go` and `podutil` that are pure functions over
API objects as dicts: create/delete expectations (`ControllerExpectations`), the slow-start batch sizes, label selector
matching, controller references, Pod readiness and availability, the deletion ranking of active Pods, the template hash
(`pod-template-hash` / `controller-revision-hash`), int-or-percent scaling, and a Pod built from a template.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, TypeVar

from pykubeadm.scheduler.matching import match_expression
from pykubeadm.util.apitime import parse_time

__all__ = [
    "BURST_REPLICAS",
    "CONTROLLER_REVISION_HASH_LABEL",
    "EXPECTATIONS_TIMEOUT",
    "POD_TEMPLATE_HASH_LABEL",
    "SLOW_START_INITIAL_BATCH_SIZE",
    "ControllerExpectations",
    "active_pods_ranked",
    "compute_hash",
    "controller_of",
    "fnv32a",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "is_pod_terminal",
    "new_controller_ref",
    "pod_from_template",
    "pod_key",
    "pod_ready_time",
    "safe_encode",
    "scaled_value",
    "selector_matches",
    "slow_start_batches",
]

#: the label the Deployment controller adds to its ReplicaSets' selector and template
POD_TEMPLATE_HASH_LABEL: Final = "pod-template-hash"
#: the label the DaemonSet (and StatefulSet) controller puts on ControllerRevisions and Pods
CONTROLLER_REVISION_HASH_LABEL: Final = "controller-revision-hash"
#: the most Pods a controller creates or deletes in one sync (replicaset: 500; daemonset uses 250)
BURST_REPLICAS: Final = 500
#: slow start: batches of 1, 2, 4, … Pods
SLOW_START_INITIAL_BATCH_SIZE: Final = 1
#: expectations older than this count as satisfied (a missed watch event must not wedge a controller)
EXPECTATIONS_TIMEOUT: Final = 5 * 60.0

Obj = Mapping[str, Any]
#: a Pod as the caller holds it (active_pods_ranked returns the caller's own objects)
P = TypeVar("P", bound=Mapping[str, Any])


# --- expectations ----------------------------------------------------------------------------------------------------


@dataclass
class _Expectation:
    add: int = 0
    delete: int = 0
    timestamp: float = 0.0
    #: keys (namespace/name) of Pods whose deletion we wait to observe (client-go's UIDTrackingControllerExpectations)
    deleting: set[str] = field(default_factory=set)


class ControllerExpectations:
    """client-go's (UID-tracking) ControllerExpectations: what a controller still expects its informer to show.

    Before creating N Pods a controller calls `expect_creations(key, N)`; the Pod informer's ADDED event calls
    `creation_observed(key)`. The next sync acts only when `satisfied(key)`, so a burst never overshoots while the cache
    catches up. Deletions are tracked per Pod key, so a Pod deleted twice is counted once.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, timeout: float = EXPECTATIONS_TIMEOUT):
        self._clock = clock
        self._timeout = timeout
        self._items: dict[str, _Expectation] = {}

    def satisfied(self, key: str) -> bool:
        exp = self._items.get(key)
        if exp is None:
            return True  # never set (new controller, or after a restart): sync
        if exp.add <= 0 and exp.delete <= 0:
            return True
        return self._clock() - exp.timestamp > self._timeout

    def set(self, key: str, add: int, delete: int, deleting: Iterable[str] = ()) -> None:
        self._items[key] = _Expectation(add, delete, self._clock(), set(deleting))

    def expect_creations(self, key: str, count: int) -> None:
        self.set(key, count, 0)

    def expect_deletions(self, key: str, pod_keys: Sequence[str]) -> None:
        self.set(key, 0, len(pod_keys), pod_keys)

    def lower(self, key: str, add: int = 0, delete: int = 0) -> None:
        exp = self._items.get(key)
        if exp is not None:
            exp.add -= add
            exp.delete -= delete

    def creation_observed(self, key: str) -> None:
        self.lower(key, add=1)

    def deletion_observed(self, key: str, pod_key: str | None = None) -> None:
        exp = self._items.get(key)
        if exp is None:
            return
        if pod_key is None:
            exp.delete -= 1
        elif pod_key in exp.deleting:
            exp.deleting.discard(pod_key)
            exp.delete -= 1

    def delete(self, key: str) -> None:
        self._items.pop(key, None)

    def pending(self, key: str) -> tuple[int, int]:
        exp = self._items.get(key)
        return (exp.add, exp.delete) if exp else (0, 0)


def slow_start_batches(count: int, initial: int = SLOW_START_INITIAL_BATCH_SIZE) -> list[int]:
    """The batch sizes of kube's slowStartBatch for `count` calls: 1, 2, 4, … (the last one cut to what is left)."""
    sizes, remaining, size = [], count, min(count, initial)
    while remaining > 0:
        sizes.append(size)
        remaining -= size
        size = min(2 * size, remaining)
    return sizes


# --- selectors and controller references -----------------------------------------------------------------------------


def selector_matches(selector: Obj | None, labels: Mapping[str, str] | None) -> bool:
    """metav1.LabelSelectorAsSelector(selector).Matches(labels): None matches nothing, `{}` matches everything."""
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(match_expression(labels, expr) for expr in selector.get("matchExpressions") or [])


def controller_of(obj: Obj) -> dict[str, Any] | None:
    """The ownerReference with `controller: true` (metav1.GetControllerOf)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def new_controller_ref(owner: Obj, api_version: str, kind: str) -> dict[str, Any]:
    """metav1.NewControllerRef: controller and blockOwnerDeletion set."""
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_key(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


# --- pod state -------------------------------------------------------------------------------------------------------


def _ready_condition(pod: Obj) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond
    return None


def is_pod_ready(pod: Obj) -> bool:
    cond = _ready_condition(pod)
    return cond is not None and cond.get("status") == "True"


def pod_ready_time(pod: Obj) -> datetime | None:
    """When the Pod last became Ready (None if not ready)."""
    cond = _ready_condition(pod)
    if cond is None or cond.get("status") != "True":
        return None
    return parse_time(cond.get("lastTransitionTime"))


def is_pod_available(pod: Obj, min_ready_seconds: int, now: datetime) -> bool:
    """Ready for at least minReadySeconds (podutil.IsPodAvailable)."""
    if not is_pod_ready(pod):
        return False
    if not min_ready_seconds:
        return True
    since = pod_ready_time(pod)
    return since is not None and (now - since).total_seconds() > min_ready_seconds


def is_pod_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_pod_active(pod: Obj) -> bool:
    """controller.IsPodActive: not finished and not being deleted."""
    return not is_pod_terminal(pod) and not (pod.get("metadata") or {}).get("deletionTimestamp")


# --- deletion ranking ------------------------------------------------------------------------------------------------

_PHASE_ORDINAL: Final = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_cost(pod: Obj) -> int:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get("controller.kubernetes.io/pod-deletion-cost")
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _max_restarts(pod: Obj) -> int:
    return max(
        (int(s.get("restartCount") or 0) for s in (pod.get("status") or {}).get("containerStatuses") or []), default=0
    )


def _log_rank(then: datetime, now: datetime) -> int:
    nanos = (now - then).total_seconds() * 1e9
    return int(math.log2(nanos)) if nanos > 0 else -1


def _compare_times(a: datetime | None, b: datetime | None, now: datetime | None, uids: tuple[str, str]) -> int:
    """Newer (or zero) first; with `now`, times in the same power-of-two age bucket tie and the UID decides."""
    if a is None or b is None or now is None:
        if a == b:
            return 0
        if a is None:
            return -1
        if b is None:
            return 1
        return -1 if a > b else 1
    diff = _log_rank(a, now) - _log_rank(b, now)
    if diff == 0:
        return -1 if uids[0] < uids[1] else (1 if uids[0] > uids[1] else 0)
    return -1 if diff < 0 else 1


def _rank_compare(a: tuple[Obj, int], b: tuple[Obj, int], now: datetime | None) -> int:
    """ActivePodsWithRanks.Less as a cmp: negative when `a` should be deleted before `b`."""
    (pa, ra), (pb, rb) = a, b
    sa, sb = pa.get("spec") or {}, pb.get("spec") or {}
    na, nb = sa.get("nodeName") or "", sb.get("nodeName") or ""
    if na != nb and (not na or not nb):
        return -1 if not na else 1  # 1. unassigned < assigned
    phase_a = _PHASE_ORDINAL.get((pa.get("status") or {}).get("phase") or "", 0)
    phase_b = _PHASE_ORDINAL.get((pb.get("status") or {}).get("phase") or "", 0)
    if phase_a != phase_b:
        return phase_a - phase_b  # 2. Pending < Unknown < Running
    ready_a, ready_b = is_pod_ready(pa), is_pod_ready(pb)
    if ready_a != ready_b:
        return -1 if not ready_a else 1  # 3. not ready < ready
    cost_a, cost_b = _deletion_cost(pa), _deletion_cost(pb)
    if cost_a != cost_b:
        return -1 if cost_a < cost_b else 1  # 4. lower pod-deletion-cost first
    if ra != rb:
        return -1 if ra > rb else 1  # 5. doubled up (more related Pods on the node) first
    uids = (str((pa.get("metadata") or {}).get("uid") or ""), str((pb.get("metadata") or {}).get("uid") or ""))
    if ready_a and ready_b:
        ta, tb = pod_ready_time(pa), pod_ready_time(pb)
        if ta != tb:
            result = _compare_times(ta, tb, now, uids)  # 6. ready for less time first
            if result:
                return result
    restarts_a, restarts_b = _max_restarts(pa), _max_restarts(pb)
    if restarts_a != restarts_b:
        return -1 if restarts_a > restarts_b else 1  # 7. more restarts first
    ca = parse_time((pa.get("metadata") or {}).get("creationTimestamp"))
    cb = parse_time((pb.get("metadata") or {}).get("creationTimestamp"))
    if ca != cb:
        return _compare_times(ca, cb, now, uids)  # 8. newer first
    return 0


def active_pods_ranked(pods: Sequence[P], related: Iterable[Obj] = (), now: datetime | None = None) -> list[P]:
    """`pods` in kube's deletion order (first = deleted first); the rank of a Pod is how many `related` active Pods
    share its node (getPodsRankedByRelatedPodsOnSameNode); `now` enables the logarithmic age buckets."""
    on_node: dict[str, int] = {}
    for pod in related:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and is_pod_active(pod):
            on_node[node] = on_node.get(node, 0) + 1
    ranked = [(pod, on_node.get((pod.get("spec") or {}).get("nodeName") or "", 0)) for pod in pods]

    def compare(a: tuple[P, int], b: tuple[P, int]) -> int:
        return _rank_compare(a, b, now)

    ranked.sort(key=functools.cmp_to_key(compare))
    return [pod for pod, _ in ranked]


# --- hashing ---------------------------------------------------------------------------------------------------------

_SAFE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


def fnv32a(data: bytes, seed: int = 0x811C9DC5) -> int:
    h = seed
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """k8s.io/apimachinery rand.SafeEncodeString: each byte mapped onto the no-vowel alphabet (no bad words)."""
    return "".join(_SAFE_ALPHABET[b % len(_SAFE_ALPHABET)] for b in text.encode())


def compute_hash(template: Obj, collision_count: int | None = None) -> str:
    """controller.ComputeHash: FNV-32a of the Pod template (+ collisionCount as 8 little-endian bytes), safe-encoded.

    kube feeds the hasher a dump of the Go struct; we feed it the template's canonical JSON (sorted keys), so values
    differ from a real cluster's for the same template but have the same shape and properties."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(4, "little") + b"\0\0\0\0"
    return safe_encode(str(fnv32a(data)))


# --- int or percent --------------------------------------------------------------------------------------------------


def scaled_value(value: int | str | None, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: an int as is, `"25%"` of `total` rounded up or down."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        try:
            return int(text)
        except ValueError:
            raise ValueError(
                f"invalid value for IntOrString: invalid type: string is not a percentage: {text!r}"
            ) from None
    try:
        percent = int(text[:-1])
    except ValueError:
        raise ValueError(f"invalid value for IntOrString: invalid value {text!r}") from None
    scaled = percent * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


# --- pod from template -----------------------------------------------------------------------------------------------


def pod_from_template(template: Obj, parent_name: str, controller_ref: Mapping[str, Any] | None) -> dict[str, Any]:
    """controller.GetPodFromTemplate: labels, annotations and finalizers of the template, `generateName: <parent>-`."""
    tmeta = template.get("metadata") or {}
    meta: dict[str, Any] = {"generateName": f"{parent_name}-"}
    for key in ("labels", "annotations", "finalizers"):
        if tmeta.get(key):
            meta[key] = copy.deepcopy(tmeta[key])
    if controller_ref is not None:
        meta["ownerReferences"] = [dict(controller_ref)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": copy.deepcopy(template.get("spec") or {})}
