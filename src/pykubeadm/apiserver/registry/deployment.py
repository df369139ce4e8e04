"""Deployment strategy (apps/v1): defaults, generation tracking, selector rules, the Deployment table."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy, field_immutable
from pykubeadm.apiserver.registry.workloads import (
    containers_images,
    default_template,
    selector_string,
    validate_workload,
)
from pykubeadm.apiserver.status import Cause

__all__ = ["DeploymentStrategy"]


class DeploymentStrategy(Strategy):
    top_fields = frozenset({"spec", "status"})
    kind = "Deployment"
    plural = "deployments"
    group = "apps"
    short_names = ("deploy",)
    categories = ("all",)
    subresources = ("status",)
    track_generation = True

    def _defaults(self, obj: Obj) -> None:
        default_template(obj)
        spec = obj.get("spec")
        if isinstance(spec, dict):
            spec.setdefault("replicas", 1)
            spec.setdefault("progressDeadlineSeconds", 600)
            strat = spec.setdefault("strategy", {})
            if isinstance(strat, dict):
                strat.setdefault("type", "RollingUpdate")
                if strat["type"] == "RollingUpdate":
                    ru = strat.setdefault("rollingUpdate", {})
                    ru.setdefault("maxUnavailable", "25%")
                    ru.setdefault("maxSurge", "25%")

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        super().prepare_for_create(obj, ctx)
        self._defaults(obj)

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        super().prepare_for_update(obj, old, ctx)
        self._defaults(obj)

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        return validate_workload(obj)

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        causes = self.validate(obj, ctx)
        if (obj.get("spec") or {}).get("selector") != (old.get("spec") or {}).get("selector"):
            causes.append(field_immutable("spec.selector", selector_string((obj.get("spec") or {}).get("selector"))))
        return causes

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
