"""Selector, node-affinity and toleration matching: the pure predicates kube-scheduler and the controllers share.

The one home of these rules (k8s.io/component-helpers' nodeaffinity and the core/v1 helpers for taints): a label
selector requirement (`match_expression`), a Pod's nodeSelector plus required node affinity against a Node
(`matches_node_selector_and_affinity`), a toleration against a taint (`tolerates`). Used by the scheduler's filters
(plugins.py) and by the controllers (controllerutil.selector_matches, the DaemonSet's node placement).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "first_untolerated_taint",
    "match_expression",
    "matches_node_selector_and_affinity",
    "node_selector_term_matches",
    "tolerates",
    "toleration_matches",
]

Obj = Mapping[str, Any]


def match_expression(labels: Mapping[str, str], expr: Obj) -> bool:
    """One requirement (`key`, `operator` In/NotIn/Exists/DoesNotExist/Gt/Lt, `values`) against a label set."""
    key, op, values = expr.get("key", ""), expr.get("operator"), list(expr.get("values") or [])
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and len(values) == 1:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def node_selector_term_matches(term: Obj, node: Obj) -> bool:
    """A nodeSelectorTerm: all its matchExpressions (on labels) and matchFields (on metadata.name); an empty term
    matches nothing."""
    meta = node.get("metadata") or {}
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    labels = meta.get("labels") or {}
    return all(match_expression(labels, e) for e in exprs) and all(
        match_expression({"metadata.name": meta.get("name") or ""}, f) for f in fields
    )


def matches_node_selector_and_affinity(pod: Obj, node: Obj) -> bool:
    """The Pod's spec.nodeSelector and requiredDuringSchedulingIgnoredDuringExecution node affinity (terms ORed)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    spec = pod.get("spec") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(node_selector_term_matches(t, node) for t in terms)


def toleration_matches(toleration: Obj, taint: Obj) -> bool:
    """v1.Toleration.ToleratesTaint: effect (empty = all), key (empty with Exists = all), Equal compares the value."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    key = toleration.get("key") or ""
    if operator == "Exists":
        return not key or key == taint.get("key")
    return key == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")


def tolerates(tolerations: Iterable[Obj], taint: Obj) -> bool:
    return any(toleration_matches(t, taint) for t in tolerations)


def first_untolerated_taint(
    taints: Iterable[Obj], tolerations: Iterable[Obj], effects: tuple[str, ...] = ("NoSchedule", "NoExecute")
) -> Obj | None:
    """The first taint with one of `effects` that no toleration tolerates (v1helper.FindMatchingUntoleratedTaint)."""
    tolerations = list(tolerations)
    for taint in taints:
        if taint.get("effect") in effects and not tolerates(tolerations, taint):
            return taint
    return None
