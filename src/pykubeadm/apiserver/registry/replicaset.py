"""ReplicaSet strategy (apps/v1): replicas default, selector/template/restartPolicy validation, the ReplicaSet table.

Served with /status and /scale (handlers/scale.py); `status.replicas` is a field label, as in kube-apiserver.
"""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col
from pykubeadm.apiserver.registry.base import Obj, RequestContext, field_invalid
from pykubeadm.apiserver.registry.podspec import default_pod_spec
from pykubeadm.apiserver.registry.workloads import (
    WorkloadStrategy,
    containers_images,
    selector_string,
    validate_replicas_template,
)
from pykubeadm.apiserver.status import Cause

__all__ = ["ReplicaSetStrategy"]


class ReplicaSetStrategy(WorkloadStrategy):
    kind = "ReplicaSet"
    plural = "replicasets"
    short_names = ("rs",)
    subresources = ("scale", "status")
    field_labels: tuple[str, ...] = ("status.replicas",)

    def default_status(self) -> Obj | None:
        return {"replicas": 0}

    def _defaults(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("replicas", 1)
        tmpl = spec.get("template")
        if isinstance(tmpl, dict):
            tmpl.setdefault("metadata", {})
            if isinstance(tmpl.get("spec"), dict):
                default_pod_spec(tmpl["spec"])

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        return validate_replicas_template(obj)

    def validate_subresource(self, sub: str, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        status = obj.get("status") or {}
        causes = []
        for k in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "terminatingReplicas"):
            v = status.get(k)
            if isinstance(v, int) and v < 0:
                causes.append(field_invalid(f"status.{k}", v, "must be greater than or equal to 0"))
        if status.get("readyReplicas", 0) > status.get("replicas", 0):
            causes.append(
                field_invalid(
                    "status.readyReplicas", status.get("readyReplicas"), "cannot be greater than status.replicas"
                )
            )
        if status.get("availableReplicas", 0) > status.get("readyReplicas", 0):
            causes.append(
                field_invalid(
                    "status.availableReplicas",
                    status.get("availableReplicas"),
                    "cannot be greater than readyReplicas",
                )
            )
        return causes

    def table_columns(self) -> list[Obj]:
        return [
            NAME_COL,
            col("Desired", "integer", "Replicas is the number of desired pods."),
            col("Current", "integer", "Replicas is the most recently observed number of non-terminating pods."),
            col(
                "Ready",
                "integer",
                "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
            ),
            AGE_COL,
            col("Containers", "string", "Names of each container in the template.", priority=1),
            col("Images", "string", "Images referenced by each container in the template.", priority=1),
            col(
                "Selector",
                "string",
                "Selector is a label query over pods that should match the replica count.",
                priority=1,
            ),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        names, images = containers_images(obj)
        return [
            obj["metadata"].get("name", ""),
            spec.get("replicas", 0),
            status.get("replicas", 0),
            status.get("readyReplicas", 0),
            age(obj),
            names,
            images,
            selector_string(spec.get("selector")),
        ]
