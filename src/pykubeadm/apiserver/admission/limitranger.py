"""LimitRanger admission (mutating, then checking): the namespace's LimitRanges give containers their default
requests and limits (`default`, `defaultRequest`, annotated `kubernetes.io/limit-ranger`) and bound them (`min`,
`max`, `maxLimitRequestRatio` per Container and per Pod), with kube's messages (`maximum memory usage per Container
is 1Gi, but limit is 2Gi`), refused as 403 Forbidden.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation, forbidden
from pykubeadm.apiserver.admission.resourcequota import _q, format_quantity
from pykubeadm.apiserver.objects import ObjectSource

__all__ = ["LimitRanger"]

Obj = dict[str, Any]
ANNOTATION = "kubernetes.io/limit-ranger"


def _ratio(v: Decimal) -> str:
    return f"{float(v):f}"


class LimitRanger:
    name = "LimitRanger"

    def __init__(self, source: ObjectSource) -> None:
        self._source = source

    def handles(self, op: Operation) -> bool:
        return op in (Operation.CREATE, Operation.UPDATE)

    async def _items(self, attrs: AdmissionAttributes) -> list[Obj]:
        if attrs.resource != "pods" or attrs.group or attrs.subresource or not attrs.namespace or attrs.obj is None:
            return []
        ranges = await self._source.list("limitranges", attrs.namespace)
        return [i for lr in ranges for i in ((lr.get("spec") or {}).get("limits") or []) if isinstance(i, dict)]

    async def admit(self, attrs: AdmissionAttributes) -> None:
        if attrs.operation is not Operation.CREATE:
            return
        items = [i for i in await self._items(attrs) if i.get("type") == "Container"]
        if not items:
            return
        pod = attrs.obj or {}
        notes = []
        for c in (pod.get("spec") or {}).get("containers") or []:
            res = c.setdefault("resources", {})
            set_req, set_lim = [], []
            for item in items:
                for name, value in (item.get("default") or {}).items():
                    if name not in (res.get("limits") or {}):
                        res.setdefault("limits", {})[name] = value
                        set_lim.append(name)
                for name, value in (item.get("defaultRequest") or {}).items():
                    if name not in (res.get("requests") or {}):
                        res.setdefault("requests", {})[name] = value
                        set_req.append(name)
            if set_req:
                notes.append(f"{', '.join(sorted(set(set_req)))} request for container {c.get('name', '')}")
            if set_lim:
                notes.append(f"{', '.join(sorted(set(set_lim)))} limit for container {c.get('name', '')}")
        if notes:
            ann = pod.setdefault("metadata", {}).setdefault("annotations", {})
            ann[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)

    async def validate(self, attrs: AdmissionAttributes) -> None:
        items = await self._items(attrs)
        if not items:
            return
        pod = attrs.obj or {}
        errors: list[str] = []
        containers = (pod.get("spec") or {}).get("containers") or []
        for item in items:
            kind = item.get("type")
            if kind == "Container":
                for c in containers:
                    res = c.get("resources") or {}
                    errors += _check(item, "Container", res.get("requests") or {}, res.get("limits") or {})
            elif kind == "Pod":
                req: dict[str, Decimal] = {}
                lim: dict[str, Decimal] = {}
                for c in containers:
                    res = c.get("resources") or {}
                    for name, v in (res.get("requests") or {}).items():
                        req[name] = req.get(name, Decimal(0)) + _q(v)
                    for name, v in (res.get("limits") or {}).items():
                        lim[name] = lim.get(name, Decimal(0)) + _q(v)
                errors += _check(item, "Pod", req, lim)
        if errors:
            raise forbidden(attrs, errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")


def _check(item: Obj, scope: str, requests: dict[str, Any], limits: dict[str, Any]) -> list[str]:
    errs = []
    for name, bound in sorted((item.get("min") or {}).items()):
        if name not in requests:
            errs.append(f"minimum {name} usage per {scope} is {bound}.  No request is specified")
        elif _q(requests[name]) < _q(bound):
            errs.append(
                f"minimum {name} usage per {scope} is {bound}, but request is {format_quantity(_q(requests[name]))}"
            )
    for name, bound in sorted((item.get("max") or {}).items()):
        if name not in limits:
            errs.append(f"maximum {name} usage per {scope} is {bound}.  No limit is specified")
        elif _q(limits[name]) > _q(bound):
            errs.append(
                f"maximum {name} usage per {scope} is {bound}, but limit is {format_quantity(_q(limits[name]))}"
            )
    for name, bound in sorted((item.get("maxLimitRequestRatio") or {}).items()):
        req, lim = _q(requests.get(name, 0)), _q(limits.get(name, 0))
        if not req or name not in limits:
            errs.append(
                f"{name} max limit to request ratio per {scope} is {bound}, but no request is specified or request is 0"
            )
        elif lim / req > _q(bound):
            errs.append(
                f"{name} max limit to request ratio per {scope} is {bound}, but provided ratio is {_ratio(lim / req)}"
            )
    return errs
