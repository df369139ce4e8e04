"""HorizontalPodAutoscaler conversion between autoscaling/v1 and autoscaling/v2 (the storage version), as kube's
pkg/apis/autoscaling/v1/conversion.go does through the internal version.

v1 has one field for the CPU utilization target (`spec.targetCPUUtilizationPercentage`) and one for its current value
(`status.currentCPUUtilizationPercentage`); everything else of a v2 object rides in annotations so a v1 client can
read, change and write the object back without losing it:

- `autoscaling.alpha.kubernetes.io/metrics`: the metrics other than a CPU utilization target, in v1's own
  MetricSpec form (the v2beta1 shape: `targetAverageUtilization`, `metricName`, ...);
- `autoscaling.alpha.kubernetes.io/current-metrics`: every current metric (v1 MetricStatus form);
- `autoscaling.alpha.kubernetes.io/conditions`: the conditions;
- `autoscaling.alpha.kubernetes.io/behavior`: `spec.behavior`, as kube writes it (the internal type's Go field names).

A v1 object without any metric gets kube's implicit default, a CPU target of 80 %. Objects written at v2 never keep
these annotations (kube drops them on the way in).
"""

from __future__ import annotations

import json
from typing import Any

from pykubeadm.apiserver import status as st

__all__ = [
    "BEHAVIOR_ANNOTATION",
    "CONDITIONS_ANNOTATION",
    "CURRENT_METRICS_ANNOTATION",
    "METRICS_ANNOTATION",
    "drop_round_trip_annotations",
    "to_v1",
    "to_v2",
]

Obj = dict[str, Any]

METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
_ROUND_TRIP = (METRICS_ANNOTATION, CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION, BEHAVIOR_ANNOTATION)
#: autoscaling.DefaultCPUUtilization: the target of a v1 object that names no metric.
DEFAULT_CPU_UTILIZATION = 80

_V1 = "autoscaling/v1"
_V2 = "autoscaling/v2"


def _pruned(d: Obj) -> Obj:
    return {k: v for k, v in d.items() if v is not None}


def _dumps(value: Any) -> str:
    """Go's json.Marshal: compact, fields in the struct's order."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def drop_round_trip_annotations(obj: Obj) -> None:
    """Remove the conversion annotations (kube does on every v2 write); an emptied map goes away."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict):
        return
    for key in _ROUND_TRIP:
        annotations.pop(key, None)
    if not annotations:
        meta.pop("annotations", None)  # type: ignore[union-attr]


# --- metric specs and statuses: v2 ↔ v1 (v2beta1 shape) --------------------------------------------------------------

#: Per metric type: v2's member name and its fields as (v1 field, v2 dotted path, what v1 holds when v2 has nothing:
#: None for v1's optional fields, a zero value for those Go always encodes), in v1's order, for specs (targets) and
#: statuses (current values).
_Fields = tuple[tuple[str, str, Any], ...]
_NAME: _Fields = (("name", "name", ""),)
_SPEC: dict[str, tuple[str, _Fields]] = {
    "Resource": ("resource", (*_NAME, ("targetAverageUtilization", "target.averageUtilization", None),
                              ("targetAverageValue", "target.averageValue", None))),
    "ContainerResource": ("containerResource", (*_NAME, ("container", "container", ""),
                                                ("targetAverageUtilization", "target.averageUtilization", None),
                                                ("targetAverageValue", "target.averageValue", None))),
    "Pods": ("pods", (("metricName", "metric.name", ""), ("targetAverageValue", "target.averageValue", "0"),
                      ("selector", "metric.selector", None))),
    "Object": ("object", (("target", "describedObject", {}), ("metricName", "metric.name", ""),
                          ("targetValue", "target.value", "0"), ("selector", "metric.selector", None),
                          ("averageValue", "target.averageValue", None))),
    "External": ("external", (("metricName", "metric.name", ""), ("metricSelector", "metric.selector", None),
                              ("targetValue", "target.value", None),
                              ("targetAverageValue", "target.averageValue", None))),
}  # fmt: skip
_STATUS: dict[str, tuple[str, _Fields]] = {
    "Resource": ("resource", (*_NAME, ("currentAverageUtilization", "current.averageUtilization", None),
                              ("currentAverageValue", "current.averageValue", "0"))),
    "ContainerResource": ("containerResource", (*_NAME, ("container", "container", ""),
                                                ("currentAverageUtilization", "current.averageUtilization", None),
                                                ("currentAverageValue", "current.averageValue", "0"))),
    "Pods": ("pods", (("metricName", "metric.name", ""), ("currentAverageValue", "current.averageValue", "0"),
                      ("selector", "metric.selector", None))),
    "Object": ("object", (("target", "describedObject", {}), ("metricName", "metric.name", ""),
                          ("currentValue", "current.value", "0"), ("selector", "metric.selector", None),
                          ("averageValue", "current.averageValue", None))),
    "External": ("external", (("metricName", "metric.name", ""), ("metricSelector", "metric.selector", None),
                              ("currentValue", "current.value", "0"),
                              ("currentAverageValue", "current.averageValue", None))),
}  # fmt: skip


def _get_path(d: Obj, dotted: str) -> Any:
    cur: Any = d
    for part in dotted.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


def _set_path(d: Obj, dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        d = d.setdefault(part, {})
    d[last] = value


def _member_to_v1(m: Obj, table: dict[str, tuple[str, _Fields]]) -> Obj:
    kind = m.get("type", "")
    out: Obj = {"type": kind}
    if kind in table:
        member, fields = table[kind]
        src = m.get(member) or {}
        body = {}
        for v1_field, v2_path, zero in fields:
            value = _get_path(src, v2_path)
            body[v1_field] = zero if value is None else value
        out[member] = _pruned(body)
    return out


def _target_type(kind: str, target: Obj) -> str:
    """The v2 target type a v1 metric implies (kube's v1 → internal conversion)."""
    if target.get("averageUtilization") is not None:
        return "Utilization"
    if kind == "Object":
        return "Value" if target.get("averageValue") is None else "AverageValue"
    if kind == "External":
        return "AverageValue" if target.get("value") is None else "Value"
    return "AverageValue"


def _member_to_v2(m: Obj, table: dict[str, tuple[str, _Fields]], spec: bool) -> Obj:
    kind = m.get("type", "")
    out: Obj = {"type": kind}
    if kind in table:
        member, fields = table[kind]
        src = m.get(member) or {}
        body: Obj = {"target": {}} if spec else {"current": {}}
        for v1_field, v2_path, zero in fields:
            value = src.get(v1_field)
            if value is None:
                if zero is None or "." in v2_path:  # optional, or a quantity v1 left out: absent in v2 too
                    continue
                value = zero
            _set_path(body, v2_path, value)
        if spec:
            body["target"] = {"type": _target_type(kind, body["target"]), **body["target"]}
        out[member] = body
    return out


def _metric_to_v1(m: Obj) -> Obj:
    return _member_to_v1(m, _SPEC)


def _metric_to_v2(m: Obj) -> Obj:
    return _member_to_v2(m, _SPEC, spec=True)


def _status_to_v1(m: Obj) -> Obj:
    return _member_to_v1(m, _STATUS)


def _status_to_v2(m: Obj) -> Obj:
    return _member_to_v2(m, _STATUS, spec=False)


# --- behavior: v2 ↔ the internal type's JSON (Go field names) --------------------------------------------------------

_RULE_FIELDS = ("stabilizationWindowSeconds", "selectPolicy", "policies", "tolerance")
_POLICY_FIELDS = ("type", "value", "periodSeconds")


def _go_name(field: str) -> str:
    return field[:1].upper() + field[1:]


def _behavior_to_internal(behavior: Obj) -> Obj:
    out: Obj = {}
    for direction in ("scaleUp", "scaleDown"):
        rules = behavior.get(direction)
        if not isinstance(rules, dict):
            out[_go_name(direction)] = None
            continue
        r: Obj = {}
        for f in _RULE_FIELDS:
            if f == "policies":
                r["Policies"] = [{_go_name(p): pol.get(p) for p in _POLICY_FIELDS} for pol in rules.get(f) or []]
            elif f != "tolerance" or rules.get(f) is not None:
                r[_go_name(f)] = rules.get(f)
        out[_go_name(direction)] = r
    return out


def _lookup(d: Obj, field: str) -> Any:
    """encoding/json's case-insensitive field match."""
    for k, v in d.items():
        if k.lower() == field.lower():
            return v
    return None


def _behavior_from_internal(raw: Any) -> Obj:
    if not isinstance(raw, dict):
        raise ValueError("the behavior is not an object")
    out: Obj = {}
    for direction in ("scaleUp", "scaleDown"):
        rules = _lookup(raw, direction)
        if not isinstance(rules, dict):
            continue
        r: Obj = {}
        for f in _RULE_FIELDS:
            v = _lookup(rules, f)
            if f == "policies" and isinstance(v, list):
                v = [_pruned({p: _lookup(pol, p) for p in _POLICY_FIELDS}) for pol in v if isinstance(pol, dict)]
            if v is not None:
                r[f] = v
        out[direction] = r
    return out


# --- whole objects ------------------------------------------------------------------------------------------------


def _is_cpu_utilization(m: Obj) -> bool:
    r = m.get("resource") if m.get("type") == "Resource" else None
    return (
        isinstance(r, dict) and r.get("name") == "cpu" and (r.get("target") or {}).get("averageUtilization") is not None
    )


def _common(obj: Obj, api_version: str) -> tuple[Obj, Obj, Obj, Obj, Obj, Obj]:
    """What both directions share: (source spec, source status, the object without spec and status at
    `api_version`, a copy of its annotations, the new spec and status with the fields both versions have)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    out: Obj = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = api_version
    annotations = dict((obj.get("metadata") or {}).get("annotations") or {})
    new_spec: Obj = {"scaleTargetRef": spec.get("scaleTargetRef") or {}}
    new_spec.update({f: spec[f] for f in ("minReplicas", "maxReplicas") if f in spec})
    new_status: Obj = {f: status[f] for f in ("observedGeneration", "lastScaleTime") if status.get(f) is not None}
    return spec, status, out, annotations, new_spec, new_status


def _finish(out: Obj, annotations: Obj, spec: Obj, status: Obj) -> Obj:
    meta = dict(out.get("metadata") or {})
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    out["spec"] = spec
    out["status"] = status
    return out


def to_v1(obj: Obj) -> Obj:
    """An autoscaling/v2 HorizontalPodAutoscaler (a stored object) as autoscaling/v1."""
    spec, status, out, annotations, v1_spec, v1_status = _common(obj, _V1)
    for key in _ROUND_TRIP:
        annotations.pop(key, None)
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    for m in metrics:
        if m.get("type") == "Resource" and (m.get("resource") or {}).get("name") == "cpu":
            target = (m.get("resource") or {}).get("target") or {}
            if target.get("averageUtilization") is not None:
                v1_spec["targetCPUUtilizationPercentage"] = target["averageUtilization"]
            break
    v1_status["currentReplicas"] = status.get("currentReplicas", 0)
    v1_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    current = [m for m in status.get("currentMetrics") or [] if isinstance(m, dict)]
    for m in current:
        r = m.get("resource") if m.get("type") == "Resource" else None
        if (
            isinstance(r, dict)
            and r.get("name") == "cpu"
            and (r.get("current") or {}).get("averageUtilization") is not None
        ):
            v1_status["currentCPUUtilizationPercentage"] = r["current"]["averageUtilization"]
    other = [_metric_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if other:
        annotations[METRICS_ANNOTATION] = _dumps(other)
    if current:
        annotations[CURRENT_METRICS_ANNOTATION] = _dumps([_status_to_v1(m) for m in current])
    if isinstance(spec.get("behavior"), dict):
        annotations[BEHAVIOR_ANNOTATION] = _dumps(_behavior_to_internal(spec["behavior"]))
    if status.get("conditions"):
        annotations[CONDITIONS_ANNOTATION] = _dumps(status["conditions"])
    return _finish(out, annotations, v1_spec, v1_status)


def _annotation(annotations: Obj, key: str) -> Any:
    try:
        return json.loads(annotations[key])
    except (TypeError, ValueError) as e:
        raise st.bad_request(f"the annotation {key} is not valid JSON: {e}") from None


def to_v2(obj: Obj) -> Obj:
    """An autoscaling/v1 HorizontalPodAutoscaler as autoscaling/v2 (what is stored); a round-trip annotation that is
    not valid JSON is a 400 naming it."""
    spec, status, out, annotations, v2_spec, v2_status = _common(obj, _V2)
    metrics: list[Obj] = []
    if METRICS_ANNOTATION in annotations:
        listed = _annotation(annotations, METRICS_ANNOTATION)
        metrics += [_metric_to_v2(m) for m in listed or [] if isinstance(m, dict)]
    if spec.get("targetCPUUtilizationPercentage") is not None:
        target = {"type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": target}})
    if not metrics:  # v1's implicit default, made explicit
        target = {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
    v2_spec["metrics"] = metrics
    if BEHAVIOR_ANNOTATION in annotations:
        try:
            v2_spec["behavior"] = _behavior_from_internal(_annotation(annotations, BEHAVIOR_ANNOTATION))
        except ValueError as e:
            raise st.bad_request(f"the annotation {BEHAVIOR_ANNOTATION} is not valid: {e}") from None
    if status.get("currentReplicas"):
        v2_status["currentReplicas"] = status["currentReplicas"]
    v2_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    if CURRENT_METRICS_ANNOTATION in annotations:  # it has more than currentCPUUtilizationPercentage
        listed = _annotation(annotations, CURRENT_METRICS_ANNOTATION)
        v2_status["currentMetrics"] = [_status_to_v2(m) for m in listed or [] if isinstance(m, dict)]
    elif status.get("currentCPUUtilizationPercentage") is not None:
        current = {"averageUtilization": status["currentCPUUtilizationPercentage"]}
        v2_status["currentMetrics"] = [{"type": "Resource", "resource": {"name": "cpu", "current": current}}]
    if CONDITIONS_ANNOTATION in annotations:
        listed = _annotation(annotations, CONDITIONS_ANNOTATION)
        v2_status["conditions"] = [c for c in listed or [] if isinstance(c, dict)]
    for key in _ROUND_TRIP:
        annotations.pop(key, None)
    return _finish(out, annotations, v2_spec, v2_status)
