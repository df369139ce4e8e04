"""The scheduling decision of the built-in kube-scheduler: which Node a pending Pod goes to. Pure functions over dicts.

Filters (in the order kube-scheduler reports them): the Node is Ready, not unschedulable (unless tolerated), matches the
Pod's nodeSelector and required node affinity, and every NoSchedule/NoExecute taint is tolerated. Among feasible Nodes
the one running the fewest Pods wins (ties by name).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "choose_node",
    "is_pending",
    "node_is_ready",
    "tolerates",
    "unschedulable_message",
]

Obj = Mapping[str, Any]

_UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def is_pending(pod: Obj, scheduler_name: str = "default-scheduler") -> bool:
    """A Pod this scheduler must place: no nodeName, our schedulerName, not finished or being deleted."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return False
    if (spec.get("schedulerName") or "default-scheduler") != scheduler_name:
        return False
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def node_is_ready(node: Obj) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def _toleration_matches(toleration: Obj, taint: Obj) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    key = toleration.get("key") or ""
    if operator == "Exists":
        return not key or key == taint.get("key")
    return key == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")


def tolerates(tolerations: Iterable[Obj], taint: Obj) -> bool:
    return any(_toleration_matches(t, taint) for t in tolerations)


def _match_expression(labels: Mapping[str, str], expr: Obj) -> bool:
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


def _matches_selector_and_affinity(pod: Obj, node: Obj) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    spec = pod.get("spec") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if terms:
        name = (node.get("metadata") or {}).get("name")

        def term_ok(term: Obj) -> bool:
            exprs = term.get("matchExpressions") or []
            fields = term.get("matchFields") or []
            if not exprs and not fields:
                return False
            return all(_match_expression(labels, e) for e in exprs) and all(
                _match_expression({"metadata.name": name or ""}, f) for f in fields
            )

        if not any(term_ok(t) for t in terms):
            return False
    return True


def _filter(pod: Obj, node: Obj) -> str | None:
    """None if the Pod fits the Node, else the reason text kube-scheduler aggregates."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    node_spec = node.get("spec") or {}
    if not node_is_ready(node):
        return "node(s) were not ready"
    if node_spec.get("unschedulable") and not tolerates(tolerations, _UNSCHEDULABLE_TAINT):
        return "node(s) were unschedulable"
    if not _matches_selector_and_affinity(pod, node):
        return "node(s) didn't match Pod's node affinity/selector"
    for taint in node_spec.get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"
    return None


def choose_node(pod: Obj, nodes: Iterable[Obj], pods_per_node: Mapping[str, int]) -> tuple[str | None, dict[str, int]]:
    """(chosen node name or None, reason → count of Nodes that failed for it)."""
    reasons: Counter[str] = Counter()
    best: tuple[int, str] | None = None
    for node in nodes:
        name = (node.get("metadata") or {}).get("name") or ""
        problem = _filter(pod, node)
        if problem is not None:
            reasons[problem] += 1
            continue
        candidate = (pods_per_node.get(name, 0), name)
        if best is None or candidate < best:
            best = candidate
    return (best[1] if best else None), dict(reasons)


def unschedulable_message(total_nodes: int, reasons: Mapping[str, int]) -> str:
    """kube-scheduler's FitError text: `0/3 nodes are available: 1 node(s) were not ready, 2 node(s) …`."""
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
    detail = ", ".join(parts)
    return f"0/{total_nodes} nodes are available: {detail}." if detail else f"0/{total_nodes} nodes are available."
