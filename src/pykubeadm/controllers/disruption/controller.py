"""The `disruption` controller: PodDisruptionBudget status, as kube's disruption controller computes it.

For each PDB: the Pods its selector picks (`{}` selects every Pod of the namespace, none when absent); expectedPods and
desiredHealthy (minAvailable as an int: desired = minAvailable, expected = number of Pods; a percentage or
maxUnavailable: expected = the sum of the Pods' controllers' scale, rounded up as intstr does); currentHealthy (Ready
Pods neither being deleted nor listed in disruptedPods); disruptionsAllowed = max(0, currentHealthy - desiredHealthy)
(0 while expectedPods is 0); disruptedPods entries the eviction API added expire after 2 minutes (then a `NotDeleted`
warning on the Pod); the `DisruptionAllowed` condition is SufficientPods / InsufficientPods, or SyncFailed with the
error when the scale cannot be found. A DisruptionTarget=True Pod condition that no deletion followed within 2 minutes
is reset to False. The pure functions here are unit-tested; `DisruptionController` wires them.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from lightkube.resources.apps_v1 import Deployment, ReplicaSet, StatefulSet
from lightkube.resources.core_v1 import Pod, PodStatus, ReplicationController
from lightkube.resources.policy_v1 import PodDisruptionBudget, PodDisruptionBudgetStatus

from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.batchutil import request
from pykubeadm.controllers.controllerutil import controller_of, is_pod_ready, scaled_value, selector_matches
from pykubeadm.controllers.controllerutil_api import EventRecorder, api_error_message, model
from pykubeadm.controllers.runtime import Controller, TemporaryError
from pykubeadm.util.apitime import format_time, parse_time

__all__ = [
    "DELETION_TIMEOUT",
    "DisruptionController",
    "Scale",
    "build_disrupted_pod_map",
    "count_healthy_pods",
    "expected_pod_count",
    "fail_safe_status",
    "new_status",
    "pods_for_pdb",
    "stale_disruption_wait",
]

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]

#: How long an eviction's disruptedPods entry waits for the Pod's deletion.
DELETION_TIMEOUT: Final = timedelta(minutes=2)
#: How long a DisruptionTarget=True condition may stay on a Pod that is not being deleted.
STALE_POD_DISRUPTION_TIMEOUT: Final = timedelta(minutes=2)
CONDITION: Final = "DisruptionAllowed"


@dataclass(frozen=True)
class Scale:
    """A controller's identity and desired replicas (kube's controllerAndScale)."""

    uid: str
    replicas: int


#: (controllerRef, namespace) → the controller's scale, None when the ref matches no controller; raises on errors
ScaleFinder = Callable[[Obj, str], Awaitable[Scale | None]]


def pods_for_pdb(pdb: Obj, pods: Iterable[Obj]) -> list[Obj]:
    """The Pods in the PDB's namespace its selector matches."""
    meta = pdb.get("metadata") or {}
    selector = (pdb.get("spec") or {}).get("selector")
    return [
        p
        for p in pods
        if (p.get("metadata") or {}).get("namespace") == meta.get("namespace")
        and selector_matches(selector, (p.get("metadata") or {}).get("labels"))
    ]


async def expected_scale(pods: Iterable[Obj], finder: ScaleFinder) -> tuple[int, list[str]]:
    """(sum of the distinct controllers' scale, names of unmanaged Pods); ValueError if a controller is missing."""
    scales: dict[str, int] = {}
    unmanaged: list[str] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        ref = controller_of(pod)
        if ref is None:
            unmanaged.append(meta.get("name", ""))
            continue
        if ref.get("uid") in scales:
            continue
        found = await finder(ref, meta.get("namespace", ""))
        if found is None:
            raise ValueError(f'found no controllers for pod "{meta.get("name", "")}"')
        scales[found.uid] = found.replicas
    return sum(scales.values()), unmanaged


async def expected_pod_count(pdb: Obj, pods: list[Obj], finder: ScaleFinder) -> tuple[int, int, list[str]]:
    """(expectedCount, desiredHealthy, unmanaged Pod names) per kube's getExpectedPodCount; ValueError on failure."""
    spec = pdb.get("spec") or {}
    max_unavailable = spec.get("maxUnavailable")
    min_available = spec.get("minAvailable")
    if max_unavailable is not None:
        expected, unmanaged = await expected_scale(pods, finder)
        desired = max(0, expected - scaled_value(max_unavailable, expected, True))
        return expected, desired, unmanaged
    if min_available is not None:
        if isinstance(min_available, int):
            return len(pods), min_available, []
        expected, unmanaged = await expected_scale(pods, finder)
        return expected, scaled_value(min_available, expected, True), unmanaged
    return 0, 0, []


def build_disrupted_pod_map(
    pdb: Obj, pods: Iterable[Obj], now: datetime
) -> tuple[dict[str, str], datetime | None, list[Obj]]:
    """(disruptedPods still pending, when to look again, Pods whose deletion was expected but did not happen)."""
    recorded = (pdb.get("status") or {}).get("disruptedPods") or {}
    result: dict[str, str] = {}
    recheck: datetime | None = None
    not_deleted: list[Obj] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        stamp = recorded.get(meta.get("name"))
        if not stamp:
            continue
        when = parse_time(stamp)
        if when is None:
            continue
        expected_deletion = when + DELETION_TIMEOUT
        if expected_deletion < now:
            not_deleted.append(pod)
        else:
            if recheck is None or expected_deletion < recheck:
                recheck = expected_deletion
            result[meta["name"]] = stamp
    return result, recheck, not_deleted


def count_healthy_pods(pods: Iterable[Obj], disrupted: Mapping[str, str], now: datetime) -> int:
    healthy = 0
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        stamp = disrupted.get(meta.get("name", ""))
        when = parse_time(stamp) if stamp else None
        if when is not None and when + DELETION_TIMEOUT > now:
            continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy


def stale_disruption_wait(pod: Obj, now: datetime) -> timedelta | None:
    """How long until a not-terminating Pod's DisruptionTarget=True condition is stale (None: it has none, it is
    the kubelet's, or the Pod is terminal or being deleted), as kube's nonTerminatingPodHasStaleDisruptionCondition."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None
    status = pod.get("status") or {}
    cond = next((c for c in status.get("conditions") or [] if c.get("type") == "DisruptionTarget"), None)
    if (
        cond is None
        or cond.get("status") != "True"
        or cond.get("reason") == "TerminationByKubelet"
        or status.get("phase") in ("Succeeded", "Failed")
    ):
        return None
    since = parse_time(cond.get("lastTransitionTime")) or now
    return max(timedelta(0), STALE_POD_DISRUPTION_TIMEOUT - (now - since))


def _set_condition(conditions: list[dict[str, Any]], new: dict[str, Any], now: datetime) -> None:
    """apimeta.SetStatusCondition: lastTransitionTime changes only with the status."""
    for cond in conditions:
        if cond.get("type") == new["type"]:
            if cond.get("status") != new["status"]:
                cond["status"] = new["status"]
                cond["lastTransitionTime"] = format_time(now)
            cond["reason"] = new["reason"]
            cond["message"] = new["message"]
            cond["observedGeneration"] = new["observedGeneration"]
            return
    conditions.append({**new, "lastTransitionTime": format_time(now)})


def _conditions_up_to_date(pdb: Obj) -> bool:
    status = pdb.get("status") or {}
    cond = next((c for c in status.get("conditions") or [] if c.get("type") == CONDITION), None)
    if cond is None or status.get("observedGeneration") != (pdb.get("metadata") or {}).get("generation"):
        return False
    return cond.get("status") == ("True" if (status.get("disruptionsAllowed") or 0) > 0 else "False")


def new_status(
    pdb: Obj, current_healthy: int, desired_healthy: int, expected: int, disrupted: Mapping[str, str], now: datetime
) -> dict[str, Any] | None:
    """The PDB's new status (kube's updatePdbStatus), None when nothing changed."""
    allowed = current_healthy - desired_healthy
    if expected <= 0 or allowed <= 0:
        allowed = 0
    status = pdb.get("status") or {}
    generation = (pdb.get("metadata") or {}).get("generation")
    if (
        status.get("currentHealthy", 0) == current_healthy
        and status.get("desiredHealthy", 0) == desired_healthy
        and status.get("expectedPods", 0) == expected
        and status.get("disruptionsAllowed", 0) == allowed
        and (status.get("disruptedPods") or {}) == dict(disrupted)
        and status.get("observedGeneration") == generation
        and _conditions_up_to_date(pdb)
    ):
        return None
    conditions = copy.deepcopy(list(status.get("conditions") or []))
    _set_condition(
        conditions,
        {
            "type": CONDITION,
            "status": "True" if allowed > 0 else "False",
            "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
            "message": "",
            "observedGeneration": generation,
        },
        now,
    )
    new: dict[str, Any] = {
        "currentHealthy": current_healthy,
        "desiredHealthy": desired_healthy,
        "expectedPods": expected,
        "disruptionsAllowed": allowed,
        "observedGeneration": generation,
        "conditions": conditions,
    }
    if disrupted:
        new["disruptedPods"] = dict(disrupted)
    return new


def fail_safe_status(pdb: Obj, error: str, now: datetime) -> dict[str, Any]:
    """kube's failSafe: no disruptions allowed, DisruptionAllowed=False/SyncFailed with the error."""
    status = copy.deepcopy(dict(pdb.get("status") or {}))
    status["disruptionsAllowed"] = 0
    conditions = list(status.get("conditions") or [])
    _set_condition(
        conditions,
        {
            "type": CONDITION,
            "status": "False",
            "reason": "SyncFailed",
            "message": error,
            "observedGeneration": status.get("observedGeneration") or 0,
        },
        now,
    )
    status["conditions"] = conditions
    return status


#: the kinds whose scale the finders read directly (any other kind goes through its scale subresource)
_Workload = ReplicaSet | Deployment | StatefulSet | ReplicationController
_KINDS: Final[dict[tuple[str, str], type[_Workload]]] = {
    ("ReplicaSet", "apps"): ReplicaSet,
    ("Deployment", "apps"): Deployment,
    ("StatefulSet", "apps"): StatefulSet,
    ("ReplicationController", ""): ReplicationController,
}


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


class DisruptionController(Controller):
    """Keeps every PodDisruptionBudget's status current (kube's disruption controller)."""

    name = "disruption"
    service_account = "disruption-controller"

    def setup(self) -> None:
        self.recorder = EventRecorder(self.client, "controllermanager")
        self.pdbs = self.watch(PodDisruptionBudget, self._on_pdb, namespace="*")
        self.pods = self.watch(Pod, self._on_pod, namespace="*")

    def _on_pdb(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED":
            self.queue.add(f"{obj.metadata.namespace}/{obj.metadata.name}")

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED":
            wait = stale_disruption_wait(obj.to_dict(), datetime.fromtimestamp(self.ctx.clock(), UTC))
            if wait is not None:
                self.queue.add_after(
                    ("stale-disruption", f"{obj.metadata.namespace}/{obj.metadata.name}"), wait.total_seconds()
                )
        for o in (obj, old):
            if o is None:
                continue
            labels = o.metadata.labels or {}
            for pdb in self.pdbs.items():
                if pdb.metadata.namespace != o.metadata.namespace:
                    continue
                selector = pdb.spec.selector.to_dict() if pdb.spec and pdb.spec.selector else None
                if selector_matches(selector, labels):
                    self.queue.add(f"{pdb.metadata.namespace}/{pdb.metadata.name}")

    async def _get(self, res: type[_Workload], name: str, namespace: str) -> dict[str, Any] | None:
        try:
            obj = await self.client.get(res, name, namespace=namespace)
        except ApiError as err:
            if is_not_found(err):
                return None
            raise
        return obj.to_dict()

    async def find_scale(self, ref: Obj, namespace: str) -> Scale | None:
        """The finders of kube's disruption controller: ReplicaSet (or its Deployment), StatefulSet, RC, and any
        other kind through its scale subresource."""
        kind, group = ref.get("kind", ""), _group(ref.get("apiVersion", ""))
        if group == "extensions":
            group = "apps"
        if (kind, group) not in _KINDS:
            return await self._scale_subresource(ref, namespace)
        obj = await self._get(_KINDS[(kind, group)], ref.get("name", ""), namespace)
        if obj is None or obj["metadata"].get("uid") != ref.get("uid"):
            return None
        if kind == "ReplicaSet":
            owner = controller_of(obj)
            if (
                owner is not None
                and owner.get("kind") == "Deployment"
                and _group(owner.get("apiVersion", ""))
                in (
                    "apps",
                    "extensions",
                )
            ):
                dep = await self._get(Deployment, owner.get("name", ""), namespace)
                if dep is None or dep["metadata"].get("uid") != owner.get("uid"):
                    return None
                return Scale(dep["metadata"]["uid"], int((dep.get("spec") or {}).get("replicas", 1)))
        return Scale(obj["metadata"]["uid"], int((obj.get("spec") or {}).get("replicas", 1)))

    async def _scale_subresource(self, ref: Obj, namespace: str) -> Scale | None:
        """kube's getScaleController: GET <resource>/<name>/scale (the resource found by discovery)."""
        api_version, kind = ref.get("apiVersion", ""), ref.get("kind", "")
        base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        try:
            listing = await request(self.client, "GET", base)
        except ApiError as err:
            if is_not_found(err):
                raise ValueError(f'no matches for kind "{kind}" in version "{api_version}"') from None
            raise
        resources = (listing or {}).get("resources") or []
        plural = next((r["name"] for r in resources if r.get("kind") == kind and "/" not in r.get("name", "")), None)
        if plural is None:
            raise ValueError(f'no matches for kind "{kind}" in version "{api_version}"')
        resource = f"{plural}.{_group(api_version)}" if _group(api_version) else plural
        if not any(r.get("name") == f"{plural}/scale" for r in resources):
            raise ValueError(f"{resource} does not implement the scale subresource")
        try:
            scale = await request(self.client, "GET", f"{base}/namespaces/{namespace}/{plural}/{ref.get('name')}/scale")
        except ApiError as err:
            if is_not_found(err):
                return None
            raise
        meta = (scale or {}).get("metadata") or {}
        if meta.get("uid") != ref.get("uid"):
            return None
        return Scale(str(meta.get("uid")), int(((scale or {}).get("spec") or {}).get("replicas") or 0))

    async def sync_stale_pod_disruption(self, key: str) -> None:
        """Reset a DisruptionTarget condition nobody acted on within 2 minutes (kube's syncStalePodDisruption)."""
        obj = self.pods.get(key)
        if obj is None:
            return
        now = datetime.fromtimestamp(self.ctx.clock(), UTC)
        wait = stale_disruption_wait(obj.to_dict(), now)
        if wait is None:
            return
        if wait > timedelta(0):
            self.queue.add_after(("stale-disruption", key), wait.total_seconds())
            return
        condition = {"type": "DisruptionTarget", "status": "False", "lastTransitionTime": format_time(now)}
        try:
            await self.client.patch(
                PodStatus, obj.metadata.name, {"status": {"conditions": [condition]}}, namespace=obj.metadata.namespace
            )
        except ApiError as err:
            if not is_not_found(err):
                raise

    async def sync(self, key: Any) -> None:
        if isinstance(key, tuple):
            await self.sync_stale_pod_disruption(key[1])
            return
        obj = self.pdbs.get(key)
        if obj is None:
            return
        pdb = obj.to_dict()
        now = datetime.fromtimestamp(self.ctx.clock(), UTC)
        pods = pods_for_pdb(
            pdb, (p.to_dict() for p in self.pods.items() if p.metadata.namespace == obj.metadata.namespace)
        )
        if not pods:
            self.recorder.event(pdb, "Normal", "NoPods", "No matching pods found")
        try:
            expected, desired, unmanaged = await expected_pod_count(pdb, pods, self.find_scale)
        except (ValueError, ApiError) as err:
            message = api_error_message(err)
            self.recorder.event(
                pdb,
                "Warning",
                "CalculateExpectedPodCountFailed",
                f"Failed to calculate the number of expected pods: {message}",
            )
            await self._write(pdb, fail_safe_status(pdb, message, now))
            return
        if unmanaged:
            selector = (pdb.get("spec") or {}).get("selector")
            self.recorder.event(
                pdb,
                "Warning",
                "UnmanagedPods",
                f"Pods selected by this PodDisruptionBudget (selector: {selector}) were found to be unmanaged. As a "
                "result, the status of the PDB cannot be calculated correctly, which may result in undefined "
                'behavior. To account for these pods please set ".spec.minAvailable" field of the PDB to an integer '
                "value.",
            )
        disrupted, recheck, not_deleted = build_disrupted_pod_map(pdb, pods, now)
        for pod in not_deleted:
            ns = pdb["metadata"]["namespace"]
            self.recorder.event(
                pod,
                "Warning",
                "NotDeleted",
                f"Pod was expected by PDB {ns}/{pdb['metadata']['name']} to be deleted but it wasn't",
            )
        healthy = count_healthy_pods(pods, disrupted, now)
        status = new_status(pdb, healthy, desired, expected, disrupted, now)
        if status is not None:
            await self._write(pdb, status)
        if recheck is not None:
            self.queue.add_after(key, max(0.0, (recheck - now).total_seconds()))

    async def _write(self, pdb: Obj, status: dict[str, Any]) -> None:
        body = copy.deepcopy(dict(pdb))
        body["status"] = status
        meta = body["metadata"]
        try:
            await self.client.replace(model(PodDisruptionBudgetStatus, body), meta["name"], namespace=meta["namespace"])
        except ApiError as err:
            if is_not_found(err):
                return
            if is_conflict(err):
                raise TemporaryError("poddisruptionbudget changed meanwhile") from err
            raise
