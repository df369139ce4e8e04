"""`mark-control-plane`: the control-plane labels and taints kubeadm puts on a Node (§7.6), as a merge of Node JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pykubeadm import constants as c

__all__ = ["CONTROL_PLANE_LABELS", "marked_node", "missing_taints"]

#: Labels added to a control-plane Node (value "").
CONTROL_PLANE_LABELS: tuple[str, ...] = (c.LABEL_NODE_ROLE_CONTROL_PLANE, c.LABEL_EXCLUDE_FROM_EXTERNAL_LB)


def missing_taints(node: dict[str, Any], taints: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The configured taints the Node does not have yet (matched by key and effect)."""
    have = {(t.get("key"), t.get("effect")) for t in (node.get("spec") or {}).get("taints") or []}
    return [t for t in taints if (t.get("key"), t.get("effect")) not in have]


def marked_node(node: dict[str, Any], taints: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A copy of `node` with the control-plane labels and any missing taints."""
    out = {**node, "metadata": {**node["metadata"]}, "spec": {**(node.get("spec") or {})}}
    out["metadata"]["labels"] = {**(node["metadata"].get("labels") or {}), **dict.fromkeys(CONTROL_PLANE_LABELS, "")}
    add = missing_taints(node, taints)
    if add:
        out["spec"]["taints"] = [*(out["spec"].get("taints") or []), *add]
    return out
