"""Deployment strategy (apps/v1): defaults, generation tracking, selector rules, the Deployment table."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col
from pykubeadm.apiserver.registry.base import Obj, RequestContext
from pykubeadm.apiserver.registry.workloads import (
    WorkloadStrategy,
    containers_images,
    selector_string,
    validate_replicas_template,
)
from pykubeadm.apiserver.status import Cause

__all__ = ["DeploymentStrategy"]


class DeploymentStrategy(WorkloadStrategy):
    kind = "Deployment"
    plural = "deployments"
    short_names = ("deploy",)
    subresources = ("scale", "status")

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        return validate_replicas_template(obj)

    def defaults(self, spec: Obj) -> None:
        spec.setdefault("replicas", 1)
        spec.setdefault("progressDeadlineSeconds", 600)
        strat = spec.setdefault("strategy", {})
        if isinstance(strat, dict):
            strat.setdefault("type", "RollingUpdate")
            if strat["type"] == "RollingUpdate":
                ru = strat.setdefault("rollingUpdate", {})
                ru.setdefault("maxUnavailable", "25%")
                ru.setdefault("maxSurge", "25%")

    def table_columns(self) -> list[Obj]:
        return [
            NAME_COL,
            col("Ready", "string", "Number of the pod with ready state"),
            col(
                "Up-to-date",
                "integer",
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
            ),
            col(
                "Available",
                "integer",
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
            ),
            AGE_COL,
            col("Containers", "string", "Names of each container in the template.", priority=1),
            col("Images", "string", "Images referenced by each container in the template.", priority=1),
            col("Selector", "string", "Label selector for pods.", priority=1),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        names, images = containers_images(obj)
        return [
            obj["metadata"].get("name", ""),
            f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
            status.get("updatedReplicas", 0),
            status.get("availableReplicas", 0),
            age(obj),
            names,
            images,
            selector_string(spec.get("selector")),
        ]
