"""Daemon Pod placement and update decisions (kube's daemon/util and the DaemonSet controller's pure parts).

Used by the daemonset controller: which Nodes should run a daemon Pod (nodeSelector, required node affinity, taints
against the template's tolerations plus the defaults kube adds to daemon Pods), the `metadata.name` node affinity that
sends a daemon Pod to its Node through the scheduler, the Node a Pod is meant for, and the Pods a rolling update
replaces (maxUnavailable) or surges (maxSurge) next.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any, Final

from pykubeadm.controllers.controllerutil import CONTROLLER_REVISION_HASH_LABEL, is_pod_available, scaled_value
from pykubeadm.scheduler.matching import matches_node_selector_and_affinity, tolerates

__all__ = [
    "DAEMON_TOLERATIONS",
    "TEMPLATE_GENERATION_LABEL",
    "add_daemon_tolerations",
    "is_pod_updated",
    "node_placement",
    "node_should_run",
    "pods_by_age",
    "rolling_update_plan",
    "target_node",
    "template_generation",
    "with_node_affinity",
]

Obj = dict[str, Any]

#: set on DaemonSets by kube-apiserver; daemon Pods then carry it as the `pod-template-generation` label
TEMPLATE_GENERATION_ANNOTATION: Final = "deprecated.daemonset.template.generation"
TEMPLATE_GENERATION_LABEL: Final = "pod-template-generation"

#: kube's AddOrUpdateDaemonPodTolerations, in its order (network-unavailable only for hostNetwork Pods)
DAEMON_TOLERATIONS: Final = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
_NETWORK_UNAVAILABLE: Final = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def add_daemon_tolerations(pod_spec: Obj) -> None:
    tolerations = pod_spec.setdefault("tolerations", [])
    extra = [*DAEMON_TOLERATIONS, _NETWORK_UNAVAILABLE] if pod_spec.get("hostNetwork") else list(DAEMON_TOLERATIONS)
    for toleration in extra:
        if toleration not in tolerations:
            tolerations.append(dict(toleration))


def with_node_affinity(pod_spec: Obj, node_name: str) -> None:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: the required node terms become `metadata.name In [node]`."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    affinity = pod_spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}


def target_node(pod: Obj) -> str | None:
    """GetTargetNodeName: spec.nodeName, or the node a not-yet-scheduled daemon Pod's affinity names."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for req in term.get("matchFields") or []:
            if req.get("key") == "metadata.name" and req.get("operator") == "In" and len(req.get("values") or []) == 1:
                return str(req["values"][0])
    return None


def node_should_run(node: Obj, ds: Obj) -> tuple[bool, bool]:
    """NodeShouldRunDaemonPod: (should run, should continue running)."""
    name = (node.get("metadata") or {}).get("name")
    spec = copy.deepcopy(((ds.get("spec") or {}).get("template") or {}).get("spec") or {})
    if spec.get("nodeName") and spec["nodeName"] != name:
        return False, False
    add_daemon_tolerations(spec)
    if not matches_node_selector_and_affinity({"spec": spec}, node):
        return False, False
    tolerations = spec.get("tolerations") or []
    untolerated = [
        t
        for t in (node.get("spec") or {}).get("taints") or []
        if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, t)
    ]
    if untolerated:
        return False, not any(t.get("effect") == "NoExecute" for t in untolerated)
    return True, True


def template_generation(ds: Obj) -> str | None:
    """The apiserver's `deprecated.daemonset.template.generation` annotation, if set."""
    value = ((ds.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    return str(value) if value else None


def is_pod_updated(pod: Obj, hash_: str, generation: str | None) -> bool:
    """IsPodUpdated: the Pod carries the current revision's hash (or, with the annotation, its template generation)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == generation:
        return True
    return bool(hash_) and labels.get(CONTROLLER_REVISION_HASH_LABEL) == hash_


def node_placement(node: Any) -> tuple[Any, ...]:
    """What of a Node decides daemon placement (kube's shouldIgnoreNodeUpdate ignores the rest)."""
    spec = node.spec
    taints = [(t.key, t.value, t.effect) for t in (spec.taints or [])] if spec else []
    return (node.metadata.labels or {}, taints, bool(spec and spec.unschedulable))


def pods_by_age(pods: list[Obj]) -> list[Obj]:
    """podByCreationTimestampAndPhase: scheduled first, then oldest, then name."""
    return sorted(
        pods,
        key=lambda p: (
            not (p.get("spec") or {}).get("nodeName"),
            str(p["metadata"].get("creationTimestamp") or ""),
            p["metadata"].get("name"),
        ),
    )


def _split(pods: list[Obj], hash_: str, generation: str | None) -> tuple[Obj | None, Obj | None, bool]:
    """findUpdatedPodsOnNode: (new pod, old pod, ok) — not ok with two of a kind."""
    new = old = None
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        if is_pod_updated(pod, hash_, generation):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


def rolling_update_plan(
    ds: Obj, node_pods: dict[str, list[Obj]], desired: int, hash_: str, now: datetime, eligible: set[str]
) -> tuple[list[str], list[str]]:
    """kube's rollingUpdate: (names of old Pods to delete, nodes to surge a new Pod onto)."""
    spec = ds.get("spec") or {}
    generation = template_generation(ds)
    ru = ((spec.get("updateStrategy") or {}).get("rollingUpdate")) or {}
    max_unavailable = scaled_value(ru.get("maxUnavailable", 1), desired, True)
    max_surge = scaled_value(ru.get("maxSurge", 0), desired, True)
    if max_unavailable == 0 and max_surge == 0:
        max_unavailable = 1
    min_ready = int(spec.get("minReadySeconds") or 0)
    to_delete: list[str] = []
    if max_surge == 0:
        unavailable, allowed, candidates = 0, [], []
        for node in sorted(node_pods):
            new, old, ok = _split(node_pods[node], hash_, generation)
            if not ok:
                unavailable += 1
            elif new is not None and old is None:
                if not is_pod_available(new, min_ready, now):
                    unavailable += 1
            elif old is not None and new is None:
                if not is_pod_available(old, min_ready, now):
                    allowed.append(old["metadata"]["name"])
                elif unavailable < max_unavailable:
                    candidates.append(old["metadata"]["name"])
        remaining = max(0, min(max_unavailable - unavailable, len(candidates)))
        return [*allowed, *candidates[:remaining]], []
    surge, allowed_nodes, candidate_nodes = 0, [], []
    for node in sorted(node_pods):
        new, old, ok = _split(node_pods[node], hash_, generation)
        if not ok:
            surge += 1
        elif old is None:
            continue
        elif new is None:
            if not is_pod_available(old, min_ready, now):
                if node not in eligible:
                    to_delete.append(old["metadata"]["name"])
                else:
                    allowed_nodes.append(node)
            elif surge < max_surge:
                candidate_nodes.append(node)
        elif not is_pod_available(new, min_ready, now):
            surge += 1
        else:
            to_delete.append(old["metadata"]["name"])
    remaining = max(0, min(max_surge - surge, len(candidate_nodes)))
    return to_delete, [*allowed_nodes, *candidate_nodes[:remaining]]
