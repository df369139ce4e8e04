"""Which webhooks a request reaches (k8s.io/apiserver webhook predicates): `rules` (operations, API groups, versions,
resources with `*`, `*/*`, `res/*`, `*/sub`, and `scope`), `namespaceSelector` and `objectSelector`.

The admission-configuration kinds themselves are never sent to webhooks, so a broken webhook cannot lock its own
configuration in place (kube's IsExemptAdmissionConfigurationResource).
"""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes
from pykubeadm.controllers.controllerutil import selector_matches

__all__ = ["exempt", "labels_of", "matches_object_selector", "matches_rules"]

Obj = dict[str, Any]

_EXEMPT = frozenset(
    {
        "validatingwebhookconfigurations",
        "mutatingwebhookconfigurations",
        "validatingadmissionpolicies",
        "validatingadmissionpolicybindings",
        "mutatingadmissionpolicies",
        "mutatingadmissionpolicybindings",
    }
)


def exempt(attrs: AdmissionAttributes) -> bool:
    return attrs.group == "admissionregistration.k8s.io" and attrs.resource in _EXEMPT


def _resource_matches(patterns: list[str], resource: str, sub: str) -> bool:
    for p in patterns:
        if p == "*/*":
            return True
        res, _, psub = p.partition("/")
        if "/" not in p:
            if not sub and p in ("*", resource):
                return True
            continue
        if res in ("*", resource) and psub in ("*", sub):
            return True
    return False


def _rule_matches(rule: Obj, attrs: AdmissionAttributes) -> bool:
    ops = rule.get("operations") or []
    if "*" not in ops and attrs.operation.value not in ops:
        return False
    groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
    if "*" not in groups and attrs.group not in groups:
        return False
    if "*" not in versions and attrs.version not in versions:
        return False
    if not _resource_matches(list(rule.get("resources") or []), attrs.resource, attrs.subresource):
        return False
    scope = rule.get("scope") or "*"
    cluster_scoped = not attrs.namespace or (attrs.group == "" and attrs.resource == "namespaces")
    if scope == "Cluster":
        return cluster_scoped
    if scope == "Namespaced":
        return not cluster_scoped
    return True


def matches_rules(rules: list[Obj], attrs: AdmissionAttributes) -> bool:
    return any(_rule_matches(r, attrs) for r in rules or [])


def labels_of(obj: Obj | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def matches_object_selector(selector: Obj | None, attrs: AdmissionAttributes) -> bool:
    """The new or the old object's labels match (an absent selector matches everything)."""
    if not selector:
        return True
    return selector_matches(selector, labels_of(attrs.obj)) or (
        attrs.old_obj is not None and selector_matches(selector, labels_of(attrs.old_obj))
    )


def namespace_selector_applies(attrs: AdmissionAttributes) -> tuple[bool, bool]:
    """(selector applies, the object is a Namespace): cluster-scoped objects other than Namespaces always match."""
    is_namespace = attrs.group == "" and attrs.resource == "namespaces"
    return is_namespace or bool(attrs.namespace), is_namespace
