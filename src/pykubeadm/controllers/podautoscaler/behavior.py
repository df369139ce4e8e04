"""kube's normalization of a replica proposal (horizontal.go): stabilization windows and scaling rules.

Without `spec.behavior`: the highest recommendation within --horizontal-pod-autoscaler-downscale-stabilization
(default 5 min) wins, then the proposal is kept within [minReplicas, min(maxReplicas, max(2 × current, 4))].
With `spec.behavior` (unset fields defaulted as autoscaling/v2 does: scale up immediately by max(4 Pods, 100 %) per
15 s; scale down by up to 100 % per 15 s after the controller's stabilization window): the recommendation is held
between the lowest of the scale-up window and the highest of the scale-down window, then limited by the policies
(selectPolicy Max, Min or Disabled) over the scale events of each policy's period. Each step reports the condition
reason and message kube sets (AbleToScale and ScalingLimited).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Normalizer", "default_behavior"]

_INT32_MAX = 2**31 - 1
_INT32_MIN = -(2**31)
_SCALE_UP_LIMIT_FACTOR = 2.0
_SCALE_UP_LIMIT_MINIMUM = 4.0


def default_behavior(behavior: Mapping[str, Any], downscale_window: float) -> dict[str, Any]:
    """`spec.behavior` with autoscaling/v2's defaults filled in (scale-down window: the controller's)."""
    out = copy.deepcopy(dict(behavior))
    up = out.setdefault("scaleUp", {}) or {}
    out["scaleUp"] = up
    up.setdefault("stabilizationWindowSeconds", 0)
    up.setdefault("selectPolicy", "Max")
    if not up.get("policies"):
        up["policies"] = [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ]
    down = out.setdefault("scaleDown", {}) or {}
    out["scaleDown"] = down
    if down.get("stabilizationWindowSeconds") is None:
        down["stabilizationWindowSeconds"] = int(downscale_window)
    down.setdefault("selectPolicy", "Max")
    if not down.get("policies"):
        down["policies"] = [{"type": "Percent", "value": 100, "periodSeconds": 15}]
    return out


@dataclass
class _Event:
    change: int
    at: float
    outdated: bool = False


@dataclass
class _State:
    recommendations: list[tuple[int, float]] = field(default_factory=list)
    up_events: list[_Event] = field(default_factory=list)
    down_events: list[_Event] = field(default_factory=list)


#: (replicas, AbleToScale (reason, message), ScalingLimited (status, reason, message))
Result = tuple[int, tuple[str, str], tuple[str, str, str]]


class Normalizer:
    """Per-HPA recommendations and scale events, kept between syncs (kube keeps them in the controller)."""

    def __init__(self, downscale_window: float = 300.0) -> None:
        self.downscale_window = downscale_window
        self._state: dict[str, _State] = {}

    def forget(self, key: str) -> None:
        self._state.pop(key, None)

    def record_initial(self, key: str, current: int, now: float) -> None:
        state = self._state.setdefault(key, _State())
        if not state.recommendations:
            state.recommendations.append((current, now))

    # --- without behavior ----------------------------------------------------------------------------------------
    def normalize(self, key: str, current: int, desired: int, min_r: int, max_r: int, now: float) -> Result:
        state = self._state.setdefault(key, _State())
        stabilized = desired
        cutoff = now - self.downscale_window
        old = -1
        for i, (rec, at) in enumerate(state.recommendations):
            if at < cutoff:
                old = i
            elif rec > stabilized:
                stabilized = rec
        if old >= 0:
            state.recommendations[old] = (desired, now)
        else:
            state.recommendations.append((desired, now))
        if stabilized != desired:
            able = ("ScaleDownStabilized", "recent recommendations were higher than current one, applying the "
                    "highest recent recommendation")  # fmt: skip
        else:
            able = ("ReadyForNewScale", "recommended size matches current size")
        up_limit = int(max(_SCALE_UP_LIMIT_FACTOR * current, _SCALE_UP_LIMIT_MINIMUM))
        if max_r > up_limit:
            allowed, why = up_limit, ("ScaleUpLimit", "the desired replica count is increasing faster than the "
                                      "maximum scale rate")  # fmt: skip
        else:
            allowed, why = (
                max_r,
                ("TooManyReplicas", "the desired replica count is more than the maximum replica count"),
            )
        if stabilized < min_r:
            out, why = min_r, ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
        elif stabilized > allowed:
            out = allowed
        else:
            out, why = stabilized, ("DesiredWithinRange", "the desired count is within the acceptable range")
        return out, able, ("False" if out == stabilized else "True", *why)

    # --- with behavior -------------------------------------------------------------------------------------------
    def normalize_with_behavior(
        self, key: str, behavior: Mapping[str, Any], current: int, desired: int, min_r: int, max_r: int, now: float
    ) -> Result:
        state = self._state.setdefault(key, _State())
        up, down = behavior["scaleUp"], behavior["scaleDown"]
        up_cutoff = now - float(up["stabilizationWindowSeconds"])
        down_cutoff = now - float(down["stabilizationWindowSeconds"])
        up_rec, down_rec = desired, desired
        old = -1
        for i, (rec, at) in enumerate(state.recommendations):
            if at > up_cutoff:
                up_rec = min(rec, up_rec)
            if at > down_cutoff:
                down_rec = max(rec, down_rec)
            if at < up_cutoff and at < down_cutoff:
                old = i
        stabilized = current
        stabilized = max(stabilized, up_rec)
        stabilized = min(stabilized, down_rec)
        if old >= 0:
            state.recommendations[old] = (desired, now)
        else:
            state.recommendations.append((desired, now))
        if stabilized != desired:
            if desired >= current:
                able = ("ScaleUpStabilized", "recent recommendations were lower than current one, applying the "
                        "lowest recent recommendation")  # fmt: skip
            else:
                able = ("ScaleDownStabilized", "recent recommendations were higher than current one, applying the "
                        "highest recent recommendation")  # fmt: skip
        else:
            able = ("ReadyForNewScale", "recommended size matches current size")
        out, why = stabilized, ("DesiredWithinRange", "the desired count is within the acceptable range")
        if stabilized > current:
            limit = max(_up_limit(current, state.up_events, up, now), current)
            if max_r > limit:
                allowed, reason = limit, ("ScaleUpLimit", "the desired replica count is increasing faster than the "
                                          "maximum scale rate")  # fmt: skip
            else:
                allowed, reason = max_r, ("TooManyReplicas", "the desired replica count is more than the maximum "
                                          "replica count")  # fmt: skip
            if stabilized > allowed:
                out, why = allowed, reason
        elif stabilized < current:
            limit = min(_down_limit(current, state.down_events, down, now), current)
            if min_r < limit:
                allowed, reason = limit, ("ScaleDownLimit", "the desired replica count is decreasing faster than the "
                                          "maximum scale rate")  # fmt: skip
            else:
                allowed, reason = min_r, ("TooFewReplicas", "the desired replica count is less than the minimum "
                                          "replica count")  # fmt: skip
            if stabilized < allowed:
                out, why = allowed, reason
        return out, able, ("False" if out == stabilized else "True", *why)

    def store_scale_event(self, key: str, behavior: Mapping[str, Any] | None, prev: int, new: int, now: float) -> None:
        if behavior is None:
            return
        state = self._state.setdefault(key, _State())
        rules, events, change = (
            (behavior["scaleUp"], state.up_events, new - prev)
            if new > prev
            else (behavior["scaleDown"], state.down_events, prev - new)
        )
        longest = max((int(p.get("periodSeconds") or 0) for p in rules.get("policies") or []), default=0)
        for e in events:
            if e.at < now - longest:
                e.outdated = True
        for i, e in enumerate(events):
            if e.outdated:
                events[i] = _Event(change, now)
                return
        events.append(_Event(change, now))


def _changed_within(period: float, events: list[_Event], now: float) -> int:
    return sum(e.change for e in events if e.at > now - period)


def _up_limit(current: int, events: list[_Event], rules: Mapping[str, Any], now: float) -> int:
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    result, pick = (_INT32_MAX, min) if select == "Min" else (_INT32_MIN, max)
    for p in rules.get("policies") or []:
        start = current - _changed_within(float(p["periodSeconds"]), events, now)
        proposed = start + int(p["value"]) if p["type"] == "Pods" else math.ceil(start * (1 + int(p["value"]) / 100))
        result = pick(result, proposed)
    return result


def _down_limit(current: int, events: list[_Event], rules: Mapping[str, Any], now: float) -> int:
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    result, pick = (_INT32_MIN, max) if select == "Min" else (_INT32_MAX, min)
    for p in rules.get("policies") or []:
        start = current + _changed_within(float(p["periodSeconds"]), events, now)
        proposed = start - int(p["value"]) if p["type"] == "Pods" else int(start * (1 - int(p["value"]) / 100))
        result = pick(result, proposed)
    return result
