"""PodStatus as the kubelet computes it: phase (getPhase), the five conditions, qosClass; pure functions.

Called by the pod worker (`PodWorker.status()`) for static and API Pods; unit-tested on their own. Condition
lastTransitionTime only moves when the condition's status changes (`Conditions` keeps them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from pykubeadm.util.apitime import now_time as now
from pykubeadm.util.quantity import parse_quantity

__all__ = ["Conditions", "now", "pod_phase", "qos_class", "worker_phase", "worker_status"]


def pod_phase(
    spec: Mapping[str, Any],
    statuses: Sequence[Mapping[str, Any]],
    init_statuses: Sequence[Mapping[str, Any]] = (),
    *,
    init_failed: bool = False,
    init_done: bool = True,
) -> str:
    """The kubelet's getPhase: Pending until initialised and every container started once; then Running, Succeeded
    or Failed by restartPolicy."""
    policy = spec.get("restartPolicy") or "Always"
    if init_failed and policy == "Never":
        return "Failed"
    running = stopped = succeeded = waiting = unknown = 0
    names = {str(s.get("name")) for s in statuses}
    for ct in spec.get("containers") or []:
        if ct.get("name") not in names:
            unknown += 1
    for s in statuses:
        state = s.get("state") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            if state["terminated"].get("exitCode") == 0:
                succeeded += 1
        elif "waiting" in state:
            last = (s.get("lastState") or {}).get("terminated")
            if last is not None:
                stopped += 1
                if policy == "OnFailure" and last.get("exitCode") == 0:
                    succeeded += 1
            else:
                waiting += 1
        else:
            unknown += 1
    if not init_done or waiting > 0:
        return "Pending"
    if running > 0 and unknown == 0:
        return "Running"
    if running == 0 and stopped > 0 and unknown == 0:
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        if policy == "Never":
            return "Failed"
        return "Running"
    return "Pending"


def _quantity_set(resources: Mapping[str, Any] | None, kind: str) -> dict[str, str]:
    values = (resources or {}).get(kind) or {}
    return {k: str(v) for k, v in values.items() if k in ("cpu", "memory")}


def qos_class(spec: Mapping[str, Any]) -> str:
    """Guaranteed (every container has cpu and memory limits equal to requests), BestEffort (no requests or limits
    at all), else Burstable; init containers count, as in kube's GetPodQOS."""
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    any_set = False
    guaranteed = True
    for ct in containers:
        res = ct.get("resources") or {}
        req = _quantity_set(res, "requests")
        lim = _quantity_set(res, "limits")
        if req or lim:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in lim or (name in req and _canonical(req[name]) != _canonical(lim[name])):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _canonical(q: str) -> Decimal | None:
    """A quantity's value, so that `1Gi` equals `1024Mi` and `100m` equals `0.1` (None when it does not parse)."""
    try:
        return parse_quantity(q)
    except ValueError:
        return None


class Conditions:
    """The Pod's conditions in the kubelet's order; a condition keeps its lastTransitionTime until its status moves."""

    ORDER = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")

    def __init__(self, existing: Sequence[Mapping[str, Any]] = ()) -> None:
        self._by_type: dict[str, dict[str, Any]] = {str(c.get("type")): dict(c) for c in existing}

    def set(self, kind: str, ok: bool, reason: str = "", message: str = "") -> None:
        status = "True" if ok else "False"
        old = self._by_type.get(kind)
        cond: dict[str, Any] = {"type": kind, "status": status, "lastProbeTime": None}
        cond["lastTransitionTime"] = (
            old["lastTransitionTime"]
            if old and old.get("status") == status and old.get("lastTransitionTime")
            else now()
        )
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        self._by_type[kind] = cond

    def get(self, kind: str) -> dict[str, Any] | None:
        return self._by_type.get(kind)

    def as_list(self) -> list[dict[str, Any]]:
        known = [self._by_type[k] for k in self.ORDER if k in self._by_type]
        return known + [c for k, c in self._by_type.items() if k not in self.ORDER]


def update_conditions(
    conds: Conditions,
    *,
    phase: str,
    sandbox_ready: bool,
    init_statuses: Sequence[Mapping[str, Any]],
    statuses: Sequence[Mapping[str, Any]],
    init_done: bool,
    readiness_gates_ok: bool = True,
) -> None:
    """Set PodReadyToStartContainers, Initialized, ContainersReady, Ready and PodScheduled as the kubelet does."""
    conds.set("PodReadyToStartContainers", sandbox_ready)
    if phase == "Succeeded" or init_done:
        conds.set("Initialized", True, "PodCompleted" if phase == "Succeeded" else "")
    else:
        pending = [str(s["name"]) for s in init_statuses if not _init_succeeded(s)]
        conds.set(
            "Initialized",
            False,
            "ContainersNotInitialized",
            f"containers with incomplete status: [{' '.join(pending)}]",
        )
    unready = [str(s["name"]) for s in statuses if not s.get("ready")]
    if phase == "Succeeded":
        conds.set("Ready", False, "PodCompleted")
        conds.set("ContainersReady", False, "PodCompleted")
    elif not init_done or unready:
        msg = f"containers with unready status: [{' '.join(unready)}]"
        conds.set("Ready", False, "ContainersNotReady", msg)
        conds.set("ContainersReady", False, "ContainersNotReady", msg)
    else:
        conds.set("ContainersReady", True)
        conds.set("Ready", readiness_gates_ok, "" if readiness_gates_ok else "ReadinessGatesNotReady")
    if conds.get("PodScheduled") is None:
        conds.set("PodScheduled", True)


def _init_succeeded(s: Mapping[str, Any]) -> bool:
    term = (s.get("state") or {}).get("terminated")
    if not term:
        return False
    return bool(term.get("exitCode") == 0)


def worker_phase(worker: Any) -> str:
    """A pod worker's phase (built-in or CRI: `failed`, `spec`, `containers`, `init_containers`, `init_failed`,
    `init_done`)."""
    if worker.failed:
        return "Failed"
    return pod_phase(
        worker.spec,
        [ct.status() for ct in worker.containers],
        [ct.status() for ct in worker.init_containers],
        init_failed=worker.init_failed,
        init_done=worker.init_done,
    )


def worker_status(worker: Any) -> dict[str, Any]:
    """The PodStatus a pod worker reports: phase, conditions, IPs, start time, QoS class and container statuses."""
    cts = [ct.status() for ct in worker.containers]
    inits = [ct.status() for ct in worker.init_containers]
    phase = worker_phase(worker)
    if phase in ("Succeeded", "Failed"):
        for s in cts:
            s["ready"] = False
    update_conditions(
        worker.conditions,
        phase=phase,
        sandbox_ready=(worker.sandbox_ready or worker.source == "file") and phase not in ("Succeeded", "Failed"),
        init_statuses=inits,
        statuses=cts,
        init_done=worker.init_done,
    )
    out: dict[str, Any] = {
        "phase": phase,
        "conditions": worker.conditions.as_list(),
        "hostIP": worker.host_ip,
        "hostIPs": [{"ip": worker.host_ip}],
        "startTime": worker.start_time,
        "qosClass": qos_class(worker.spec),
        "containerStatuses": cts,
    }
    if worker.pod_ips:
        out["podIP"], out["podIPs"] = worker.pod_ip, [{"ip": ip} for ip in worker.pod_ips]
    if inits:
        out["initContainerStatuses"] = inits
    if worker.failed:
        out["reason"], out["message"] = worker.failed
    return out
