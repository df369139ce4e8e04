"""The scheduling decision of the built-in kube-scheduler: which Node a pending Pod goes to, or kube's FitError text.

`choose_node` runs the default profile's filters on every Node, scores the feasible ones (plugins.py) and takes the
highest total; ties go to the Node with the fewest Pods, then by name (kube picks among ties at random). When no Node
fits, `unschedulable_message` is kube-scheduler's FitError with the DefaultPreemption PostFilter's part: Nodes that
failed only on resolvable reasons (resources, spreading, anti-affinity) could be helped by evicting lower-priority
Pods, but with no lower-priority victims kube says "No preemption victims found for incoming pod"; the others
"Preemption is not helpful for scheduling".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pykubeadm.scheduler.nodeinfo import NodeInfo
from pykubeadm.scheduler.plugins import Cycle, Failure, run_filters, score_nodes

__all__ = ["Decision", "choose_node", "is_pending", "unschedulable_message"]

Obj = Mapping[str, Any]


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


@dataclass
class Decision:
    """The chosen Node (None: unschedulable), each failed Node's verdict, and the feasible Nodes' scores."""

    node: str | None
    failures: dict[str, Failure] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)


def choose_node(
    pod: Obj, nodes: Sequence[NodeInfo], volume_filter: Callable[[Obj], str | None] | None = None
) -> Decision:
    """The best Node for `pod`; `volume_filter(node)` is the VolumeBinding Filter (its reason, or None)."""
    cycle = Cycle(pod, nodes)
    failures: dict[str, Failure] = {}
    feasible: list[NodeInfo] = []
    for ni in nodes:
        failure = run_filters(cycle, ni)
        if failure is None and volume_filter is not None:
            reason = volume_filter(ni.node)
            if reason is not None:
                failure = Failure((reason,))
        if failure is None:
            feasible.append(ni)
        else:
            failures[ni.name] = failure
    if not feasible:
        return Decision(None, failures)
    scores = score_nodes(cycle, feasible)
    best = max(feasible, key=lambda ni: (scores[ni.name], -len(ni.pods), _reverse(ni.name)))
    return Decision(best.name, failures, scores)


def _reverse(name: str) -> tuple[int, ...]:
    return (*(-ord(ch) for ch in name), 0)


def _histogram(counts: Counter[str]) -> str:
    return ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))


def unschedulable_message(
    total_nodes: int, failures: Mapping[str, Failure], preemption_never: bool = False, pre_filter: str = ""
) -> str:
    """kube-scheduler's FitError: `0/3 nodes are available: 1 node(s) had untolerated taint {…}, 2 node(s) didn't
    match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for
    scheduling.`"""
    if total_nodes == 0:
        return "no nodes available to schedule pods"
    reasons: Counter[str] = Counter()
    for failure in failures.values():
        reasons.update(failure.reasons)
    message = f"0/{total_nodes} nodes are available:"
    if pre_filter:  # a PreFilter plugin rejected the Pod before any Node was looked at
        message += f" {pre_filter}."
        failures = {f"node-{i}": Failure(()) for i in range(total_nodes)}
    if reasons:
        message += f" {_histogram(reasons)}."
    if preemption_never:
        return message + " preemption: not eligible due to preemptionPolicy=Never."
    post: Counter[str] = Counter()
    for failure in failures.values():
        post["No preemption victims found for incoming pod" if failure.resolvable else
             "Preemption is not helpful for scheduling"] += 1  # fmt: skip
    post_total = len(failures)
    return message + f" preemption: 0/{post_total} nodes are available: {_histogram(post)}."
