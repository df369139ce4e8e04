"""PodDisruptionBudget strategy (policy/v1): spec validation (minAvailable xor maxUnavailable, int or percent),
/status, generation on spec changes, the MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS table, and `pdb_selects`
(which Pods a budget covers, as the eviction subresource and the disruption controller read it)."""

from __future__ import annotations

import re
from typing import Any

from pykubeadm.apiserver.printing import col
from pykubeadm.apiserver.registry.base import (
    Obj,
    RequestContext,
    Strategy,
    field_invalid,
    name_age_columns,
    name_age_row,
)
from pykubeadm.apiserver.registry.jobspec import not_supported
from pykubeadm.apiserver.registry.workloads import selector_string
from pykubeadm.apiserver.selectors import parse_label_selector
from pykubeadm.apiserver.status import Cause

__all__ = ["PodDisruptionBudgetStrategy", "pdb_selects"]

_PERCENT = re.compile(r"^[0-9]+%$")
_UNHEALTHY_POLICIES = ("AlwaysAllow", "IfHealthyBudget")
_STATUS_COUNTS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")


def pdb_selects(pdb: Obj, labels: dict[str, str] | None) -> bool:
    """policy/v1: a null selector selects no Pods, an empty one ({}) every Pod of the namespace."""
    sel = (pdb.get("spec") or {}).get("selector")
    if not isinstance(sel, dict):
        return False
    if not (sel.get("matchLabels") or sel.get("matchExpressions")):
        return True
    try:
        return parse_label_selector(selector_string(sel)).matches(labels or {})
    except Exception:
        return False


def _int_or_percent(value: Any, path: str) -> list[Cause]:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return [field_invalid(path, value, "must be an integer or percentage (e.g '5%')")]
    if isinstance(value, int):
        return [field_invalid(path, value, "must be greater than or equal to 0")] if value < 0 else []
    if not _PERCENT.match(value):
        return [
            field_invalid(
                path,
                value,
                "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
                "regex used for validation is '[0-9]+%')",
            )
        ]
    if int(value[:-1]) > 100:
        return [field_invalid(path, value, "must not be greater than 100%")]
    return []


class PodDisruptionBudgetStrategy(Strategy):
    top_fields = frozenset({"spec", "status"})
    kind = "PodDisruptionBudget"
    plural = "poddisruptionbudgets"
    group = "policy"
    short_names = ("pdb",)
    subresources = ("status",)
    track_generation = True

    def default_status(self) -> Obj | None:
        return {k: 0 for k in _STATUS_COUNTS}

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            causes.append(
                field_invalid(
                    "spec", "policy.PodDisruptionBudgetSpec{...}", "minAvailable and maxUnavailable cannot be both set"
                )
            )
        for key in ("minAvailable", "maxUnavailable"):
            if spec.get(key) is not None:
                causes += _int_or_percent(spec[key], f"spec.{key}")
        policy = spec.get("unhealthyPodEvictionPolicy")
        if policy is not None and policy not in _UNHEALTHY_POLICIES:
            causes.append(not_supported("spec.unhealthyPodEvictionPolicy", policy, _UNHEALTHY_POLICIES))
        return causes

    def validate_subresource(self, sub: str, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        status = obj.get("status") or {}
        causes: list[Cause] = []
        for key in _STATUS_COUNTS:
            v = status.get(key, 0)
            if not isinstance(v, int) or v < 0:
                causes.append(field_invalid(f"status.{key}", v, "must be greater than or equal to 0"))
        return causes

    def table_columns(self) -> list[Obj]:
        return name_age_columns(
            col("Min Available", "string", "The minimum number of pods that must be available simultaneously."),
            col("Max Unavailable", "string", "The maximum number of pods that may be unavailable simultaneously."),
            col("Allowed Disruptions", "integer", "Number of pod disruptions that are currently allowed."),
        )

    def table_row(self, obj: Obj) -> list[Any]:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        shown = ["N/A" if spec.get(k) is None else str(spec[k]) for k in ("minAvailable", "maxUnavailable")]
        return name_age_row(obj, *shown, status.get("disruptionsAllowed", 0))
