"""The APIService kind (apiregistration.k8s.io/v1) as kube-aggregator serves it: validation, the status subresource,
the NAME/SERVICE/AVAILABLE/AGE table, and the Local APIServices kube-apiserver registers for its own group versions
(names `v1.apps`, priorities from kube-apiserver's defaults table, label automanaged=onstart, condition Local).
"""

from __future__ import annotations

import re
from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col, now_rfc3339
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy, field_invalid, required
from pykubeadm.apiserver.status import Cause

__all__ = [
    "AUTOMANAGED_LABEL",
    "GROUP",
    "PRIORITIES",
    "APIServiceStrategy",
    "apiservice_name",
    "available_condition",
    "is_local",
    "local_apiservice",
]

GROUP = "apiregistration.k8s.io"
#: kube-apiserver's autoregister label: "onstart" for its own group versions, "true" for CRD groups.
AUTOMANAGED_LABEL = "kube-aggregator.kubernetes.io/automanaged"

#: (group, version) → (groupPriorityMinimum, versionPriority): kube-apiserver's apiVersionPriorities
#: (cmd/kube-apiserver/app/aggregator.go and DefaultGenericAPIServicePriorities).
PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apiregistration.k8s.io", "v1"): (18000, 15),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
}
#: A served group missing from the table (kube's advice for a new group: below the lowest, version 9).
_FALLBACK = (15000, 9)

_VERSION_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def apiservice_name(group: str, version: str) -> str:
    """`v1.apps`; the core group's is `v1.` (version, dot, empty group)."""
    return f"{version}.{group}"


def available_condition(status: str, reason: str, message: str, previous: Obj | None = None) -> Obj:
    """The Available condition; lastTransitionTime kept when the status did not change."""
    when = now_rfc3339()
    for c in ((previous or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "Available" and c.get("status") == status and c.get("lastTransitionTime"):
            when = c["lastTransitionTime"]
    return {"type": "Available", "status": status, "lastTransitionTime": when, "reason": reason, "message": message}


def local_apiservice(group: str, version: str) -> Obj:
    gp, vp = PRIORITIES.get((group, version), _FALLBACK)
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "APIService",
        "metadata": {"name": apiservice_name(group, version), "labels": {AUTOMANAGED_LABEL: "onstart"}},
        "spec": {"group": group, "version": version, "groupPriorityMinimum": gp, "versionPriority": vp},
    }


def is_local(obj: Obj) -> bool:
    return not (obj.get("spec") or {}).get("service")


class APIServiceStrategy(Strategy):
    top_fields = frozenset({"spec", "status"})
    kind = "APIService"
    plural = "apiservices"
    group = GROUP
    namespaced = False
    subresources = ("status",)
    storage_prefix = "apiregistration.k8s.io/apiservices"
    name_rule = "path"

    def default_status(self) -> Obj | None:
        return {}

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        super().prepare_for_create(obj, ctx)
        svc = (obj.get("spec") or {}).get("service")
        if isinstance(svc, dict) and svc.get("port") is None:
            svc["port"] = 443
        if is_local(obj):
            # kube-aggregator's AvailableConditionController marks a Local APIService available at once.
            obj["status"] = {
                "conditions": [available_condition("True", "Local", "Local APIServices are always available")]
            }

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        super().prepare_for_update(obj, old, ctx)
        svc = (obj.get("spec") or {}).get("service")
        if isinstance(svc, dict) and svc.get("port") is None:
            svc["port"] = 443

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        """kube-aggregator's ValidateAPIService."""
        causes: list[Cause] = []
        spec = obj.get("spec") or {}
        name = obj.get("metadata", {}).get("name", "")
        group, version = spec.get("group", ""), spec.get("version", "")
        want = apiservice_name(group, version)
        if name != want:
            causes.append(field_invalid("metadata.name", name, f'must be "{want}"'))
        if not version:
            causes.append(required("spec.version"))
        elif not _VERSION_RE.match(version):
            causes.append(field_invalid("spec.version", version, "a DNS-1035 label is required"))
        svc = spec.get("service")
        if svc:
            for k in ("namespace", "name"):
                if not svc.get(k):
                    causes.append(required(f"spec.service.{k}"))
            port = svc.get("port", 443)
            if not isinstance(port, int) or not 0 < port < 65536:
                causes.append(field_invalid("spec.service.port", port, "must be a valid port number (1-65535)"))
            if not group:
                causes.append(field_invalid("spec.group", group, "only empty for the Local v1 group"))
            if spec.get("insecureSkipTLSVerify") and spec.get("caBundle"):
                causes.append(
                    field_invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present")
                )
        for k in ("groupPriorityMinimum", "versionPriority"):
            v = spec.get(k)
            if v is None:
                causes.append(required(f"spec.{k}"))
            elif not isinstance(v, int) or v <= 0 or (k == "groupPriorityMinimum" and v > 20000):
                limit = "must be positive and less than 20000" if k == "groupPriorityMinimum" else "must be positive"
                causes.append(field_invalid(f"spec.{k}", v, limit))
        return causes

    def table_columns(self) -> list[Obj]:
        return [
            NAME_COL,
            col("Service", "string", "The reference to the service that hosts this API endpoint."),
            col("Available", "string", "Whether this service is available."),
            AGE_COL,
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        svc = (obj.get("spec") or {}).get("service")
        where = f"{svc.get('namespace', '')}/{svc.get('name', '')}" if svc else "Local"
        available = "Unknown"
        for c in (obj.get("status") or {}).get("conditions") or []:
            if c.get("type") == "Available":
                s = c.get("status", "")
                available = s if s == "True" else f"{s} ({c.get('reason', '')})"
        return [obj.get("metadata", {}).get("name", ""), where, available, age(obj)]
