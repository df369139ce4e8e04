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


def _metric_to_v1(m: Obj) -> Obj:
    kind = m.get("type", "")
    out: Obj = {"type": kind}
    if kind in ("Resource", "ContainerResource"):
        src = m.get("resource" if kind == "Resource" else "containerResource") or {}
        target = src.get("target") or {}
        body = {
            "name": src.get("name", ""),
            "container": src.get("container") if kind == "ContainerResource" else None,
            "targetAverageUtilization": target.get("averageUtilization"),
            "targetAverageValue": target.get("averageValue"),
        }
        out["resource" if kind == "Resource" else "containerResource"] = _pruned(body)
    elif kind == "Pods":
        src = m.get("pods") or {}
        metric, target = src.get("metric") or {}, src.get("target") or {}
        out["pods"] = _pruned(
            {
                "metricName": metric.get("name", ""),
                "targetAverageValue": target.get("averageValue", "0"),
                "selector": metric.get("selector"),
            }
        )
    elif kind == "Object":
        src = m.get("object") or {}
        metric, target = src.get("metric") or {}, src.get("target") or {}
        out["object"] = _pruned(
            {
                "target": src.get("describedObject") or {},
                "metricName": metric.get("name", ""),
                "targetValue": target.get("value", "0"),
                "selector": metric.get("selector"),
                "averageValue": target.get("averageValue"),
            }
        )
    elif kind == "External":
        src = m.get("external") or {}
        metric, target = src.get("metric") or {}, src.get("target") or {}
        out["external"] = _pruned(
            {
                "metricName": metric.get("name", ""),
                "metricSelector": metric.get("selector"),
                "targetValue": target.get("value"),
                "targetAverageValue": target.get("averageValue"),
            }
        )
    return out


def _metric_to_v2(m: Obj) -> Obj:
    kind = m.get("type", "")
    out: Obj = {"type": kind}
    if kind in ("Resource", "ContainerResource"):
        src = m.get("resource" if kind == "Resource" else "containerResource") or {}
        utilization = src.get("targetAverageUtilization")
        target = _pruned(
            {
                "type": "AverageValue" if utilization is None else "Utilization",
                "averageUtilization": utilization,
                "averageValue": src.get("targetAverageValue"),
            }
        )
        body = {"name": src.get("name", ""), "container": src.get("container"), "target": target}
        out["resource" if kind == "Resource" else "containerResource"] = _pruned(body)
    elif kind == "Pods":
        src = m.get("pods") or {}
        out["pods"] = {
            "metric": _pruned({"name": src.get("metricName", ""), "selector": src.get("selector")}),
            "target": {"type": "AverageValue", "averageValue": src.get("targetAverageValue", "0")},
        }
    elif kind == "Object":
        src = m.get("object") or {}
        average = src.get("averageValue")
        out["object"] = {
            "describedObject": src.get("target") or {},
            "metric": _pruned({"name": src.get("metricName", ""), "selector": src.get("selector")}),
            "target": _pruned(
                {
                    "type": "Value" if average is None else "AverageValue",
                    "value": src.get("targetValue", "0"),
                    "averageValue": average,
                }
            ),
        }
    elif kind == "External":
        src = m.get("external") or {}
        value = src.get("targetValue")
        out["external"] = {
            "metric": _pruned({"name": src.get("metricName", ""), "selector": src.get("metricSelector")}),
            "target": _pruned(
                {
                    "type": "AverageValue" if value is None else "Value",
                    "value": value,
                    "averageValue": src.get("targetAverageValue"),
                }
            ),
        }
    return out


def _status_to_v1(m: Obj) -> Obj:
    kind = m.get("type", "")
    out: Obj = {"type": kind}
    if kind in ("Resource", "ContainerResource"):
        src = m.get("resource" if kind == "Resource" else "containerResource") or {}
        current = src.get("current") or {}
        body = {
            "name": src.get("name", ""),
            "container": src.get("container") if kind == "ContainerResource" else None,
            "currentAverageUtilization": current.get("averageUtilization"),
            "currentAverageValue": current.get("averageValue", "0"),
        }
        out["resource" if kind == "Resource" else "containerResource"] = _pruned(body)
    elif kind == "Pods":
        src = m.get("pods") or {}
        metric, current = src.get("metric") or {}, src.get("current") or {}
        out["pods"] = _pruned(
            {
                "metricName": metric.get("name", ""),
                "currentAverageValue": current.get("averageValue", "0"),
                "selector": metric.get("selector"),
            }
        )
    elif kind == "Object":
        src = m.get("object") or {}
        metric, current = src.get("metric") or {}, src.get("current") or {}
        out["object"] = _pruned(
            {
                "target": src.get("describedObject") or {},
                "metricName": metric.get("name", ""),
                "currentValue": current.get("value", "0"),
                "selector": metric.get("selector"),
                "averageValue": current.get("averageValue"),
            }
        )
    elif kind == "External":
        src = m.get("external") or {}
        metric, current = src.get("metric") or {}, src.get("current") or {}
        out["external"] = _pruned(
            {
                "metricName": metric.get("name", ""),
                "metricSelector": metric.get("selector"),
                "currentValue": current.get("value", "0"),
                "currentAverageValue": current.get("averageValue"),
            }
        )
    return out


def _status_to_v2(m: Obj) -> Obj:
    kind = m.get("type", "")
    out: Obj = {"type": kind}
    if kind in ("Resource", "ContainerResource"):
        src = m.get("resource" if kind == "Resource" else "containerResource") or {}
        current = _pruned(
            {"averageValue": src.get("currentAverageValue"), "averageUtilization": src.get("currentAverageUtilization")}
        )
        body = {"name": src.get("name", ""), "container": src.get("container"), "current": current}
        out["resource" if kind == "Resource" else "containerResource"] = _pruned(body)
    elif kind == "Pods":
        src = m.get("pods") or {}
        out["pods"] = {
            "metric": _pruned({"name": src.get("metricName", ""), "selector": src.get("selector")}),
            "current": _pruned({"averageValue": src.get("currentAverageValue")}),
        }
    elif kind == "Object":
        src = m.get("object") or {}
        out["object"] = {
            "describedObject": src.get("target") or {},
            "metric": _pruned({"name": src.get("metricName", ""), "selector": src.get("selector")}),
            "current": _pruned({"value": src.get("currentValue"), "averageValue": src.get("averageValue")}),
        }
    elif kind == "External":
        src = m.get("external") or {}
        out["external"] = {
            "metric": _pruned({"name": src.get("metricName", ""), "selector": src.get("metricSelector")}),
            "current": _pruned({"value": src.get("currentValue"), "averageValue": src.get("currentAverageValue")}),
        }
    return out


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


def to_v1(obj: Obj) -> Obj:
    """An autoscaling/v2 HorizontalPodAutoscaler (a stored object) as autoscaling/v1."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    out: Obj = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = _V1
    meta = dict(obj.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    for key in _ROUND_TRIP:
        annotations.pop(key, None)
    v1_spec: Obj = {"scaleTargetRef": spec.get("scaleTargetRef") or {}}
    for f in ("minReplicas", "maxReplicas"):
        if f in spec:
            v1_spec[f] = spec[f]
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    for m in metrics:
        if m.get("type") == "Resource" and (m.get("resource") or {}).get("name") == "cpu":
            target = (m.get("resource") or {}).get("target") or {}
            if target.get("averageUtilization") is not None:
                v1_spec["targetCPUUtilizationPercentage"] = target["averageUtilization"]
            break
    v1_status: Obj = {}
    for f in ("observedGeneration", "lastScaleTime"):
        if status.get(f) is not None:
            v1_status[f] = status[f]
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
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    out["spec"] = v1_spec
    out["status"] = v1_status
    return out


def _annotation(annotations: Obj, key: str) -> Any:
    try:
        return json.loads(annotations[key])
    except (TypeError, ValueError) as e:
        raise st.bad_request(f"the annotation {key} is not valid JSON: {e}") from None


def to_v2(obj: Obj) -> Obj:
    """An autoscaling/v1 HorizontalPodAutoscaler as autoscaling/v2 (what is stored); a round-trip annotation that is
    not valid JSON is a 400 naming it."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    out: Obj = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = _V2
    meta = dict(obj.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    v2_spec: Obj = {"scaleTargetRef": spec.get("scaleTargetRef") or {}}
    for f in ("minReplicas", "maxReplicas"):
        if f in spec:
            v2_spec[f] = spec[f]
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
    v2_status: Obj = {}
    for f in ("observedGeneration", "lastScaleTime"):
        if status.get(f) is not None:
            v2_status[f] = status[f]
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
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    out["spec"] = v2_spec
    out["status"] = v2_status
    return out
