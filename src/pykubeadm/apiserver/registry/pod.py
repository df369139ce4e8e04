"""Pod strategy: spec defaults, Pending status on create, /status and /binding, graceful deletion of bound pods."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy, field_immutable
from pykubeadm.apiserver.registry.podspec import default_pod_spec, validate_pod_spec
from pykubeadm.apiserver.status import Cause

__all__ = ["PodStrategy"]


class PodStrategy(Strategy):
    top_fields = frozenset({"spec", "status"})
    kind = "Pod"
    plural = "pods"
    return_deleted_object = True
    short_names = ("po",)
    categories = ("all",)
    subresources = ("attach", "binding", "eviction", "exec", "log", "portforward", "status")
    field_labels: tuple[str, ...] = (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    )

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            default_pod_spec(spec)
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        super().prepare_for_update(obj, old, ctx)
        if isinstance(obj.get("spec"), dict):
            default_pod_spec(obj["spec"])

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        return validate_pod_spec(obj.get("spec"), "spec")

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        causes = self.validate(obj, ctx)
        ospec, nspec = old.get("spec") or {}, obj.get("spec") or {}
        if ospec.get("nodeName") and nspec.get("nodeName") != ospec.get("nodeName"):
            causes.append(field_immutable("spec.nodeName", nspec.get("nodeName", "")))
        return causes

    def graceful_delete(self, obj: Obj, options: dict[str, Any] | None = None) -> bool:
        grace = (options or {}).get("gracePeriodSeconds")
        spec, phase = obj.get("spec") or {}, (obj.get("status") or {}).get("phase")
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed") or int(grace) <= 0:
            return False
        if obj["metadata"].get("deletionTimestamp"):
            return True
        obj["metadata"]["deletionGracePeriodSeconds"] = int(grace)
        return True

    def has_finalizers(self, obj: Obj) -> bool:
        return bool(obj.get("metadata", {}).get("finalizers"))

    def table_columns(self) -> list[Obj]:
        return [
            NAME_COL,
            col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
            col("Status", "string", "The aggregate status of the containers in this pod."),
            col("Restarts", "string", "The number of times the containers in this pod have been restarted."),
            AGE_COL,
            col("IP", "string", "IP address allocated to the pod.", priority=1),
            col("Node", "string", "Name of the Node this pod is assigned to.", priority=1),
            col("Nominated Node", "string", "Name of the node nominated by the scheduler.", priority=1),
            col("Readiness Gates", "string", "The aggregate readiness state of the readiness gates.", priority=1),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        cstat = status.get("containerStatuses") or []
        ready = sum(1 for c in cstat if c.get("ready"))
        restarts = sum(int(c.get("restartCount") or 0) for c in cstat)
        reason = status.get("reason") or status.get("phase") or ""
        for c in cstat:
            state = c.get("state") or {}
            if state.get("waiting", {}).get("reason"):
                reason = state["waiting"]["reason"]
            elif state.get("terminated", {}).get("reason"):
                reason = state["terminated"]["reason"]
        if obj["metadata"].get("deletionTimestamp"):
            reason = "Terminating"
        return [
            obj["metadata"].get("name", ""),
            f"{ready}/{len(spec.get('containers') or [])}",
            reason,
            restarts,
            age(obj),
            status.get("podIP") or "<none>",
            spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>",
            "<none>",
        ]
