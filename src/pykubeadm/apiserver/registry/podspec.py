"""Pod spec defaulting shared by Pod, Deployment and DaemonSet strategies (what kube-apiserver's v1 defaults add)."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.registry.base import Obj, field_invalid, required
from pykubeadm.apiserver.status import Cause

__all__ = ["default_pod_spec", "validate_pod_spec"]


def _default_container(c: Obj) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    if "imagePullPolicy" not in c:
        image = str(c.get("image", ""))
        tag = image.rsplit("/", 1)[-1]
        latest = "@" not in image and (":" not in tag or tag.endswith(":latest"))
        c["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    c.setdefault("resources", {})
    for p in c.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")


def default_pod_spec(spec: Obj) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _default_container(c)


def validate_pod_spec(spec: Any, path: str) -> list[Cause]:
    if not isinstance(spec, dict):
        return [required(path)]
    causes: list[Cause] = []
    containers = spec.get("containers")
    if not containers or not isinstance(containers, list):
        return [required(f"{path}.containers")]
    seen = set()
    for i, c in enumerate(containers):
        if not isinstance(c, dict):
            causes.append(field_invalid(f"{path}.containers[{i}]", "", "must be an object"))
            continue
        name = c.get("name")
        if not name:
            causes.append(required(f"{path}.containers[{i}].name"))
        elif name in seen:
            causes.append(Cause("FieldValueDuplicate", f'Duplicate value: "{name}"', f"{path}.containers[{i}].name"))
        seen.add(name)
        if not c.get("image"):
            causes.append(required(f"{path}.containers[{i}].image"))
    return causes
