"""kube-scheduler's default plugins as pure functions over a scheduling cycle: the filters and the scores.

Filters, in kube's order (the first that fails decides a Node's reasons): NodeUnschedulable, NodeName, TaintToleration
(NoSchedule/NoExecute; a NotReady or unreachable Node is kept out by the nodelifecycle controller's taints, exactly as
in kube, so DaemonSet Pods that tolerate them still land), NodeAffinity, NodeResourcesFit (pod count, cpu, memory,
ephemeral-storage, extended resources), PodTopologySpread (DoNotSchedule constraints), InterPodAffinity (required
affinity/anti-affinity, and existing Pods' anti-affinity against the incoming Pod). Each failure carries kube's reason
text and whether preemption could help (kube's Unschedulable vs UnschedulableAndUnresolvable).

Scores (0-100 each after normalising, weighted as kube's default profile): TaintToleration ×3 (PreferNoSchedule),
NodeAffinity ×2 (preferred terms), NodeResourcesFit ×1 (LeastAllocated over cpu and memory), PodTopologySpread ×2
(the Pod's ScheduleAnyway constraints, else the system defaults: maxSkew 3 over kubernetes.io/hostname and 5 over
topology.kubernetes.io/zone among the Pods of the same controller), InterPodAffinity ×2 (preferred terms),
NodeResourcesBalancedAllocation ×1. Deviations: host ports (NodePorts) and volumes are not checked; the system default
spreading selects Pods by their controlling owner rather than by the owner's and Services' selectors; a term's
non-empty namespaceSelector is not evaluated (only `namespaces`, or every namespace for `{}`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pykubeadm.controllers.controllerutil import selector_matches
from pykubeadm.scheduler.matching import (
    first_untolerated_taint,
    matches_node_selector_and_affinity,
    node_selector_term_matches,
    tolerates,
)
from pykubeadm.scheduler.nodeinfo import NodeInfo, PodInfo, pod_info

__all__ = ["SCORE_WEIGHTS", "Cycle", "Failure", "run_filters", "score_nodes"]

Obj = Mapping[str, Any]

HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
MAX_NODE_SCORE: Final = 100
#: kube's default profile weights
SCORE_WEIGHTS: Final = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesBalancedAllocation": 1,
}
#: PodTopologySpread's system default constraints (ScheduleAnyway)
SYSTEM_DEFAULT_CONSTRAINTS: Final = ((3, HOSTNAME_LABEL), (5, ZONE_LABEL))

_UNSCHEDULABLE_TAINT: Final = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
_FIT_RESOURCES: Final = ("cpu", "memory")


@dataclass(frozen=True)
class Failure:
    """Why a Node does not fit: kube's reason texts, and whether evicting lower-priority Pods could change that."""

    reasons: tuple[str, ...]
    resolvable: bool = False


@dataclass(frozen=True)
class _Term:
    topology_key: str
    selector: Obj | None
    namespaces: frozenset[str] | None  # None: every namespace

    def matches(self, info: PodInfo) -> bool:
        if self.namespaces is not None and info.namespace not in self.namespaces:
            return False
        return selector_matches(self.selector, info.labels)


def _term(raw: Obj, namespace: str) -> _Term:
    names = raw.get("namespaces") or []
    everywhere = not names and raw.get("namespaceSelector") == {}
    return _Term(
        str(raw.get("topologyKey") or ""),
        raw.get("labelSelector"),
        None if everywhere else frozenset(names or [namespace]),
    )


@dataclass
class Cycle:
    """One Pod's scheduling cycle: the Pod, every Node with its Pods, and what PreFilter computed once."""

    pod: Obj
    nodes: Sequence[NodeInfo]
    info: PodInfo = field(init=False)
    tolerations: list[Obj] = field(init=False)
    _domains: dict[tuple[str, int], set[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.info = pod_info(self.pod)
        self.tolerations = list((self.pod.get("spec") or {}).get("tolerations") or [])
        affinity = (self.pod.get("spec") or {}).get("affinity") or {}
        ns = self.info.namespace
        req = "requiredDuringSchedulingIgnoredDuringExecution"
        self.affinity_terms = [_term(t, ns) for t in (affinity.get("podAffinity") or {}).get(req) or []]
        self.anti_terms = [_term(t, ns) for t in (affinity.get("podAntiAffinity") or {}).get(req) or []]
        self._prefilter_pod_affinity()

    # --- InterPodAffinity PreFilter ------------------------------------------------------------------------------

    def _prefilter_pod_affinity(self) -> None:
        #: (topology key, value) pairs where an existing Pod's anti-affinity forbids the incoming Pod
        self.forbidden: set[tuple[str, str]] = set()
        #: per affinity / anti-affinity term: topology values holding a matching Pod
        self.affinity_domains: list[set[str]] = [set() for _ in self.affinity_terms]
        self.anti_domains: list[set[str]] = [set() for _ in self.anti_terms]
        self.any_affinity_match = False
        for ni in self.nodes:
            labels = ni.labels
            for other in ni.pods.values():
                for raw in other.anti_affinity:
                    term = _term(raw, other.namespace)
                    if term.topology_key in labels and term.matches(self.info):
                        self.forbidden.add((term.topology_key, labels[term.topology_key]))
                for i, term in enumerate(self.affinity_terms):
                    if term.topology_key in labels and term.matches(other):
                        self.affinity_domains[i].add(labels[term.topology_key])
                        self.any_affinity_match = True
                for i, term in enumerate(self.anti_terms):
                    if term.topology_key in labels and term.matches(other):
                        self.anti_domains[i].add(labels[term.topology_key])


# --- filters ---------------------------------------------------------------------------------------------------------


def _node_unschedulable(c: Cycle, ni: NodeInfo) -> Failure | None:
    if (ni.node.get("spec") or {}).get("unschedulable") and not tolerates(c.tolerations, _UNSCHEDULABLE_TAINT):
        return Failure(("node(s) were unschedulable",))
    return None


def _node_name(c: Cycle, ni: NodeInfo) -> Failure | None:
    wanted = (c.pod.get("spec") or {}).get("nodeName")
    if wanted and wanted != ni.name:
        return Failure(("node(s) didn't match the requested node name",))
    return None


def _taint_toleration(c: Cycle, ni: NodeInfo) -> Failure | None:
    taint = first_untolerated_taint((ni.node.get("spec") or {}).get("taints") or [], c.tolerations)
    if taint is not None:
        return Failure((f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}",))
    return None


def _node_affinity(c: Cycle, ni: NodeInfo) -> Failure | None:
    if not matches_node_selector_and_affinity(c.pod, ni.node):
        return Failure(("node(s) didn't match Pod's node affinity/selector",))
    return None


def _resources_fit(c: Cycle, ni: NodeInfo) -> Failure | None:
    reasons = []
    allocatable = ni.allocatable
    if len(ni.pods) + 1 > allocatable.get("pods", 110):
        reasons.append("Too many pods")
    for name, want in sorted(c.info.requests.items()):
        if want > 0 and ni.requested.get(name, 0) + want > allocatable.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return Failure(tuple(reasons), resolvable=True) if reasons else None


def _spread_constraints(c: Cycle, when: str) -> list[Obj]:
    return [
        t
        for t in (c.pod.get("spec") or {}).get("topologySpreadConstraints") or []
        if (t.get("whenUnsatisfiable") or "DoNotSchedule") == when
    ]


def _count_matching(c: Cycle, constraint: Obj, nodes: Sequence[NodeInfo]) -> dict[str, int]:
    key, selector = constraint.get("topologyKey") or "", constraint.get("labelSelector")
    counts: dict[str, int] = defaultdict(int)
    for ni in nodes:
        if key not in ni.labels:
            continue
        value = ni.labels[key]
        counts[value] += sum(
            1 for p in ni.pods.values() if p.namespace == c.info.namespace and selector_matches(selector, p.labels)
        )
    return counts


def _pod_topology_spread(c: Cycle, ni: NodeInfo) -> Failure | None:
    constraints = _spread_constraints(c, "DoNotSchedule")
    if not constraints:
        return None
    eligible = [n for n in c.nodes if matches_node_selector_and_affinity(c.pod, n.node)]
    for constraint in constraints:
        key = constraint.get("topologyKey") or ""
        if key not in ni.labels:
            return Failure(("node(s) didn't match pod topology spread constraints (missing required label)",))
        counts = _count_matching(c, constraint, eligible)
        self_match = 1 if selector_matches(constraint.get("labelSelector"), c.info.labels) else 0
        skew = counts.get(ni.labels[key], 0) + self_match - min(counts.values(), default=0)
        if skew > int(constraint.get("maxSkew") or 1):
            return Failure(("node(s) didn't match pod topology spread constraints",), resolvable=True)
    return None


def _inter_pod_affinity(c: Cycle, ni: NodeInfo) -> Failure | None:
    labels = ni.labels
    if c.affinity_terms:
        if c.any_affinity_match:
            ok = all(
                t.topology_key in labels and labels[t.topology_key] in c.affinity_domains[i]
                for i, t in enumerate(c.affinity_terms)
            )
        else:  # no Pod matches yet: the first Pod of a group that selects itself may go anywhere with the keys
            ok = all(t.matches(c.info) and t.topology_key in labels for t in c.affinity_terms)
        if not ok:
            return Failure(("node(s) didn't match pod affinity rules",))
    for i, t in enumerate(c.anti_terms):
        if t.topology_key in labels and labels[t.topology_key] in c.anti_domains[i]:
            return Failure(("node(s) didn't match pod anti-affinity rules",), resolvable=True)
    if any((key, labels.get(key)) in c.forbidden for key, _ in c.forbidden):
        return Failure(("node(s) didn't satisfy existing pods anti-affinity rules",), resolvable=True)
    return None


_FILTERS: Final[tuple[Callable[[Cycle, NodeInfo], Failure | None], ...]] = (
    _node_unschedulable,
    _node_name,
    _taint_toleration,
    _node_affinity,
    _resources_fit,
    _pod_topology_spread,
    _inter_pod_affinity,
)


def run_filters(c: Cycle, ni: NodeInfo) -> Failure | None:
    """The first failing filter's verdict on the Node, or None if the Pod fits."""
    for plugin in _FILTERS:
        failure = plugin(c, ni)
        if failure is not None:
            return failure
    return None


# --- scores ----------------------------------------------------------------------------------------------------------


def _normalize(raw: dict[str, float], reverse: bool = False) -> dict[str, float]:
    """kube's DefaultNormalizeScore: scale to 0-100 by the maximum (`reverse`: fewer is better)."""
    top = max(raw.values(), default=0)
    if top == 0:
        return {n: (MAX_NODE_SCORE if reverse else 0) for n in raw}
    return {
        n: (MAX_NODE_SCORE - s * MAX_NODE_SCORE / top if reverse else s * MAX_NODE_SCORE / top) for n, s in raw.items()
    }


def _score_taints(c: Cycle, nodes: Sequence[NodeInfo]) -> dict[str, float]:
    prefer = [t for t in c.tolerations if (t.get("effect") or "PreferNoSchedule") == "PreferNoSchedule"]
    raw = {
        ni.name: float(
            sum(
                1
                for t in (ni.node.get("spec") or {}).get("taints") or []
                if t.get("effect") == "PreferNoSchedule" and not tolerates(prefer, t)
            )
        )
        for ni in nodes
    }
    return _normalize(raw, reverse=True)


def _score_node_affinity(c: Cycle, nodes: Sequence[NodeInfo]) -> dict[str, float]:
    preferred = (((c.pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution"
    ) or []
    raw = {
        ni.name: float(
            sum(
                int(p.get("weight") or 0)
                for p in preferred
                if node_selector_term_matches(p.get("preference") or {}, ni.node)
            )
        )
        for ni in nodes
    }
    return _normalize(raw)


def _fractions(c: Cycle, ni: NodeInfo) -> list[float]:
    out = []
    for name in _FIT_RESOURCES:
        alloc = ni.allocatable.get(name, 0)
        used = ni.non_zero_requested.get(name, 0) + c.info.non_zero.get(name, 0)
        out.append(min(1.0, used / alloc) if alloc > 0 else 1.0)
    return out


def _score_least_allocated(c: Cycle, nodes: Sequence[NodeInfo]) -> dict[str, float]:
    return {ni.name: sum((1 - f) * MAX_NODE_SCORE for f in _fractions(c, ni)) / len(_FIT_RESOURCES) for ni in nodes}


def _score_balanced(c: Cycle, nodes: Sequence[NodeInfo]) -> dict[str, float]:
    out = {}
    for ni in nodes:
        fr = _fractions(c, ni)
        mean = sum(fr) / len(fr)
        std = math.sqrt(sum((f - mean) ** 2 for f in fr) / len(fr))
        out[ni.name] = (1 - std) * MAX_NODE_SCORE
    return out


def _matching_pods(namespace: str, selector: Mapping[str, Any] | None) -> Callable[[NodeInfo], int]:
    """A node's count of Pods in `namespace` that `selector` matches (a spread constraint's labelSelector)."""

    def count(ni: NodeInfo) -> int:
        return sum(1 for p in ni.pods.values() if p.namespace == namespace and selector_matches(selector, p.labels))

    return count


def _score_topology_spread(c: Cycle, nodes: Sequence[NodeInfo]) -> dict[str, float]:
    own = _spread_constraints(c, "ScheduleAnyway")
    counters: list[tuple[int, str, Callable[[NodeInfo], int]]] = []
    if own:
        for constraint in own:
            selector = constraint.get("labelSelector")
            counters.append(
                (
                    int(constraint.get("maxSkew") or 1),
                    constraint.get("topologyKey") or "",
                    _matching_pods(c.info.namespace, selector),
                )
            )
    elif c.info.owner_uid and not _spread_constraints(c, "DoNotSchedule"):
        owner = c.info.owner_uid
        counters = [(skew, key, lambda ni: ni.owners.get(owner, 0)) for skew, key in SYSTEM_DEFAULT_CONSTRAINTS]
    if not counters:
        return {ni.name: 0.0 for ni in nodes}
    raw: dict[str, float] = {ni.name: 0.0 for ni in nodes}
    for max_skew, key, count in counters:
        per_domain: dict[str, int] = defaultdict(int)
        for ni in c.nodes:
            if key in ni.labels:
                per_domain[ni.labels[key]] += count(ni)
        weight = math.log(len({ni.labels[key] for ni in nodes if key in ni.labels}) + 2)
        for ni in nodes:
            if key in ni.labels:
                raw[ni.name] += per_domain[ni.labels[key]] * weight + (max_skew - 1)
    top, low = max(raw.values()), min(raw.values())
    if top == 0:
        return {n: float(MAX_NODE_SCORE) for n in raw}
    return {n: MAX_NODE_SCORE * (top + low - s) / top for n, s in raw.items()}


def _score_inter_pod_affinity(c: Cycle, nodes: Sequence[NodeInfo]) -> dict[str, float]:
    spec_aff = (c.pod.get("spec") or {}).get("affinity") or {}
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    weighted = [
        (int(w.get("weight") or 0), _term(w.get("podAffinityTerm") or {}, c.info.namespace))
        for w in (spec_aff.get("podAffinity") or {}).get(pref) or []
    ]
    weighted += [(-int(w.get("weight") or 0), _term(w.get("podAffinityTerm") or {}, c.info.namespace)) for w in
                 (spec_aff.get("podAntiAffinity") or {}).get(pref) or []]  # fmt: skip
    if not weighted:
        return {ni.name: 0.0 for ni in nodes}
    domain_score: dict[tuple[str, str], float] = defaultdict(float)
    for ni in c.nodes:
        for other in ni.pods.values():
            for weight, term in weighted:
                if term.topology_key in ni.labels and term.matches(other):
                    domain_score[(term.topology_key, ni.labels[term.topology_key])] += weight
    keys = {t.topology_key for _, t in weighted}
    raw = {ni.name: sum(domain_score.get((k, ni.labels[k]), 0.0) for k in keys if k in ni.labels) for ni in nodes}
    top, low = max(raw.values()), min(raw.values())
    if top == low:
        return {n: 0.0 for n in raw}
    return {n: MAX_NODE_SCORE * (s - low) / (top - low) for n, s in raw.items()}


_SCORES: Final[dict[str, Callable[[Cycle, Sequence[NodeInfo]], dict[str, float]]]] = {
    "TaintToleration": _score_taints,
    "NodeAffinity": _score_node_affinity,
    "NodeResourcesFit": _score_least_allocated,
    "PodTopologySpread": _score_topology_spread,
    "InterPodAffinity": _score_inter_pod_affinity,
    "NodeResourcesBalancedAllocation": _score_balanced,
}


def score_nodes(c: Cycle, feasible: Sequence[NodeInfo]) -> dict[str, float]:
    """The weighted sum of every score plugin for each feasible Node."""
    total = {ni.name: 0.0 for ni in feasible}
    if len(feasible) <= 1:
        return total
    for plugin, fn in _SCORES.items():
        for name, value in fn(c, feasible).items():
            total[name] += SCORE_WEIGHTS[plugin] * math.floor(value)
    return total
