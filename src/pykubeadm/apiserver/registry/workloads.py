"""Shared Deployment/DaemonSet helpers: selector/template validation and the container/image/selector cells."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.registry.base import Obj, field_invalid, required
from pykubeadm.apiserver.registry.podspec import default_pod_spec, validate_pod_spec
from pykubeadm.apiserver.selectors import parse_label_selector
from pykubeadm.apiserver.status import Cause

__all__ = ["containers_images", "default_template", "labels_str", "selector_string", "validate_workload"]


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
    tmpl = spec.get("template") if isinstance(spec.get("template"), dict) else {}
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


def labels_str(labels: dict[str, str]) -> str:
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(labels.items())) + "]"


def containers_images(obj: Obj) -> tuple[str, str]:
    cs = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    return ",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs)
