"""DaemonSet strategy (apps/v1): defaults, generation tracking, selector rules, the DaemonSet table."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col
from pykubeadm.apiserver.registry.base import Obj
from pykubeadm.apiserver.registry.workloads import (
    WorkloadStrategy,
    containers_images,
    selector_string,
)

__all__ = ["DaemonSetStrategy"]


class DaemonSetStrategy(WorkloadStrategy):
    kind = "DaemonSet"
    plural = "daemonsets"
    short_names = ("ds",)

    def default_status(self) -> Obj | None:
        return {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0}

    def defaults(self, spec: Obj) -> None:
        us = spec.setdefault("updateStrategy", {})
        if isinstance(us, dict):
            us.setdefault("type", "RollingUpdate")
            if us["type"] == "RollingUpdate":
                ru = us.setdefault("rollingUpdate", {})
                ru.setdefault("maxUnavailable", 1)
                ru.setdefault("maxSurge", 0)

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
