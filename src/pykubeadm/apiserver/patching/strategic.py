"""Strategic merge patch (kubectl's default patch type) for the built-in kinds in scope.

Maps merge, `null` deletes, lists with a merge strategy merge by their merge key (or as sets for scalar lists), other
lists are replaced. Directives: `$patch` (replace/delete), `$setElementOrder/<f>`, `$deleteFromPrimitiveList/<f>`,
`$retainKeys`. Directives are never stored. The merge-key table mirrors the `patchStrategy`/`patchMergeKey` tags of
k8s.io/api for the fields listed in reference/apiserver-wire-facts.md §6.3.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SCHEMAS", "apply_strategic_merge_patch"]


@dataclass(frozen=True)
class Node:
    """Schema of one field: list strategy ("merge", "merge,retainKeys", "retainKeys", or "" = atomic/map),
    merge key of object lists (None for scalar sets), and the schema of its children."""

    strategy: str = ""
    key: str | None = None
    children: dict[str, Node] = field(default_factory=dict)


def M(**children: Node) -> Node:
    return Node(children=children)


def L(key: str | None, strategy: str = "merge", **children: Node) -> Node:
    return Node(strategy, key, children)


META = M(ownerReferences=L("uid"), finalizers=L(None))
CONTAINER = M(ports=L("containerPort"), env=L("name"), volumeMounts=L("mountPath"), volumeDevices=L("devicePath"))
POD_SPEC = M(
    containers=Node("merge", "name", CONTAINER.children),
    initContainers=Node("merge", "name", CONTAINER.children),
    ephemeralContainers=Node("merge", "name", CONTAINER.children),
    imagePullSecrets=L("name"),
    volumes=L("name", "merge,retainKeys"),
    hostAliases=L("ip"),
    topologySpreadConstraints=L("topologyKey"),
    schedulingGates=L("name"),
    resourceClaims=L("name", "merge,retainKeys"),
)
CONDITIONS = L("type")
TEMPLATE = M(metadata=META, spec=POD_SPEC)

SCHEMAS: dict[str, Node] = {
    "Pod": M(metadata=META, spec=POD_SPEC, status=M(conditions=CONDITIONS)),
    "Deployment": M(
        metadata=META,
        spec=M(template=TEMPLATE, strategy=Node("retainKeys")),
        status=M(conditions=CONDITIONS),
    ),
    "DaemonSet": M(metadata=META, spec=M(template=TEMPLATE), status=M(conditions=CONDITIONS)),
    "Service": M(metadata=META, spec=M(ports=L("port")), status=M(conditions=CONDITIONS)),
    "ServiceAccount": M(metadata=META, secrets=L("name")),
    "Node": M(metadata=META, spec=M(podCIDRs=L(None)), status=M(conditions=CONDITIONS, addresses=L("type"))),
    "Namespace": M(metadata=META, status=M(conditions=CONDITIONS)),
    "ReplicaSet": M(metadata=META, spec=M(template=TEMPLATE), status=M(conditions=CONDITIONS)),
    "Job": M(metadata=META, spec=M(template=TEMPLATE), status=M(conditions=CONDITIONS)),
    "CronJob": M(metadata=META, spec=M(jobTemplate=M(metadata=META, spec=M(template=TEMPLATE)))),
    "PodDisruptionBudget": M(metadata=META, status=M(conditions=CONDITIONS)),
}
DEFAULT = M(metadata=META)


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value if not (isinstance(v, dict) and set(v) <= {"$patch"})]
    return value


def _reorder(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    def ident(x: Any) -> Any:
        return x.get(key) if key is not None and isinstance(x, dict) else x

    wanted = [ident(o) for o in order]
    rank = {w: i for i, w in enumerate(wanted) if not isinstance(w, (dict, list))}
    slots = [i for i, x in enumerate(items) if not isinstance(ident(x), (dict, list)) and ident(x) in rank]
    ordered = sorted((items[i] for i in slots), key=lambda x: rank[ident(x)])
    out = list(items)
    for slot, item in zip(slots, ordered, strict=True):
        out[slot] = item
    return out


def _merge_list(orig: list[Any], patch: list[Any], node: Node) -> list[Any]:
    if any(isinstance(e, dict) and e.get("$patch") == "replace" for e in patch):
        return [_strip(e) for e in patch if not (isinstance(e, dict) and e.get("$patch") == "replace")]
    if node.key is None:
        out = list(orig)
        for e in patch:
            if e not in out:
                out.append(e)
        return out
    out = [copy.deepcopy(e) for e in orig]
    for pe in patch:
        if not isinstance(pe, dict):
            continue
        kv = pe.get(node.key)
        idx = next((i for i, e in enumerate(out) if isinstance(e, dict) and e.get(node.key) == kv), None)
        if pe.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(_merge_map({}, pe, node))
        else:
            out[idx] = _merge_map(out[idx], pe, node)
    return out


def _merge_map(orig: dict[str, Any], patch: dict[str, Any], node: Node) -> Any:
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip(patch)
    if directive == "delete":
        return None
    result = dict(orig)
    children = node.children
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            result.pop(k, None)
            continue
        child = children.get(k, Node())
        cur = result.get(k)
        if isinstance(v, dict):
            merged = _merge_map(cur if isinstance(cur, dict) else {}, v, child)
            if merged is None:
                result.pop(k, None)
            else:
                result[k] = merged
        elif isinstance(v, list) and "merge" in child.strategy:
            result[k] = _merge_list(cur if isinstance(cur, list) else [], v, child)
        else:
            result[k] = _strip(v)
    for k, v in patch.items():
        if k.startswith("$deleteFromPrimitiveList/") and isinstance(v, list):
            f = k.split("/", 1)[1]
            if isinstance(result.get(f), list):
                result[f] = [x for x in result[f] if x not in v]
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") and isinstance(v, list):
            f = k.split("/", 1)[1]
            if isinstance(result.get(f), list):
                result[f] = _reorder(result[f], v, children.get(f, Node()).key)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def apply_strategic_merge_patch(obj: dict[str, Any], patch: dict[str, Any], kind: str) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise ValueError("strategic merge patch must be a JSON object")
    merged = _merge_map(copy.deepcopy(obj), patch, SCHEMAS.get(kind, DEFAULT))
    return merged if merged is not None else {}
