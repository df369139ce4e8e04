"""Shared Deployment/DaemonSet code: the apps/v1 workload strategy base (defaulting hooks, selector/template validation,
immutable selector) and the container/image/selector table cells."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy, field_immutable, field_invalid, required
from pykubeadm.apiserver.registry.jobspec import nonnegative
from pykubeadm.apiserver.registry.podspec import default_pod_spec, validate_pod_spec
from pykubeadm.apiserver.selectors import parse_label_selector
from pykubeadm.apiserver.status import Cause

__all__ = [
    "WorkloadStrategy",
    "containers_images",
    "default_template",
    "labels_str",
    "selector_string",
    "validate_replicas_template",
    "validate_workload",
]


def default_template(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("revisionHistoryLimit", 10)
        tmpl = spec.get("template")
        if isinstance(tmpl, dict):
            tmpl.setdefault("metadata", {})
            if isinstance(tmpl.get("spec"), dict):
                default_pod_spec(tmpl["spec"])


def selector_string(sel: Any) -> str:
    if not isinstance(sel, dict):
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op = str(e.get("operator", "")).lower()
        if op in ("in", "notin"):
            parts.append(f"{e.get('key')} {op} ({','.join(e.get('values') or [])})")
        elif op == "exists":
            parts.append(str(e.get("key")))
        else:
            parts.append(f"!{e.get('key')}")
    return ",".join(parts) or "<none>"


def validate_workload(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    causes: list[Cause] = []
    sel = spec.get("selector")
    template = spec.get("template")
    tmpl: dict[str, Any] = template if isinstance(template, dict) else {}
    if not isinstance(sel, dict) or not (sel.get("matchLabels") or sel.get("matchExpressions")):
        causes.append(required("spec.selector"))
    else:
        labels = (tmpl.get("metadata") or {}).get("labels") or {}
        sel_str = selector_string(sel)
        try:
            matches = parse_label_selector(sel_str).matches(labels)
        except Exception:
            matches = False
        if not matches:
            causes.append(
                field_invalid(
                    "spec.template.metadata.labels", labels_str(labels), "`selector` does not match template `labels`"
                )
            )
    causes += validate_pod_spec(tmpl.get("spec"), "spec.template.spec")
    return causes


def validate_replicas_template(obj: Obj) -> list[Cause]:
    """ValidateReplicaSetSpec: replicas and minReadySeconds >= 0, the selector/template rules of `validate_workload`,
    restartPolicy Always and no activeDeadlineSeconds in the template (ValidatePodTemplateSpecForReplicaSet)."""
    causes = validate_workload(obj)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return causes
    causes += nonnegative(spec, "replicas", "spec") + nonnegative(spec, "minReadySeconds", "spec")
    pod = ((spec.get("template") or {}).get("spec")) if isinstance(spec.get("template"), dict) else None
    if isinstance(pod, dict):
        policy = pod.get("restartPolicy", "Always")
        if policy != "Always":
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: "{policy}": supported values: "Always"',
                    "spec.template.spec.restartPolicy",
                )
            )
        if pod.get("activeDeadlineSeconds") is not None:
            causes.append(
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported",
                    "spec.template.spec.activeDeadlineSeconds",
                )
            )
    return causes


def labels_str(labels: dict[str, str]) -> str:
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(labels.items())) + "]"


def containers_images(obj: Obj) -> tuple[str, str]:
    cs = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    return ",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs)


class WorkloadStrategy(Strategy):
    """apps/v1 workloads: spec+status, generation tracking, defaults on create and update, an immutable selector."""

    top_fields = frozenset({"spec", "status"})
    group = "apps"
    categories = ("all",)
    subresources: tuple[str, ...] = ("status",)
    track_generation = True

    def defaults(self, spec: Obj) -> None:
        """Kind-specific defaults of `spec` (the pod template's are applied by the base)."""

    def _defaults(self, obj: Obj) -> None:
        default_template(obj)
        spec = obj.get("spec")
        if isinstance(spec, dict):
            self.defaults(spec)

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
