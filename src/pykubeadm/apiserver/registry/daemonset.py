"""DaemonSet strategy (apps/v1): defaults, generation tracking, selector rules, the DaemonSet table."""

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

__all__ = ["DaemonSetStrategy"]


class DaemonSetStrategy(Strategy):
    top_fields = frozenset({"spec", "status"})
    kind = "DaemonSet"
    plural = "daemonsets"
    group = "apps"
    short_names = ("ds",)
    categories = ("all",)
    subresources = ("status",)
    track_generation = True

    def default_status(self) -> Obj | None:
        return {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0}

    def _defaults(self, obj: Obj) -> None:
        default_template(obj)
        spec = obj.get("spec")
        if isinstance(spec, dict):
            us = spec.setdefault("updateStrategy", {})
            if isinstance(us, dict):
                us.setdefault("type", "RollingUpdate")
                if us["type"] == "RollingUpdate":
                    ru = us.setdefault("rollingUpdate", {})
                    ru.setdefault("maxUnavailable", 1)
                    ru.setdefault("maxSurge", 0)

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
            col("Desired", "integer", "The total number of nodes that should be running the daemon pod."),
            col("Current", "integer", "The number of nodes that are running at least 1 daemon pod."),
            col(
                "Ready",
                "integer",
                "The number of nodes that should be running the daemon pod and have one or more ready.",
            ),
            col("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
            col(
                "Available",
                "integer",
                "The number of nodes that should be running the daemon pod and have one or more available.",
            ),
            col(
                "Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a node."
            ),
            AGE_COL,
            col("Containers", "string", "Names of each container in the template.", priority=1),
            col("Images", "string", "Images referenced by each container in the template.", priority=1),
            col("Selector", "string", "A label query over pods that are managed by the daemon set.", priority=1),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        ns = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
        names, images = containers_images(obj)
        return [
            obj["metadata"].get("name", ""),
            status.get("desiredNumberScheduled", 0),
            status.get("currentNumberScheduled", 0),
            status.get("numberReady", 0),
            status.get("updatedNumberScheduled", 0),
            status.get("numberAvailable", 0),
            ",".join(f"{k}={v}" for k, v in sorted(ns.items())) or "<none>",
            age(obj),
            names,
            images,
            selector_string(spec.get("selector")),
        ]
