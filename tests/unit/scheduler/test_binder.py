"""The scheduler's placement decision: kube's filters (taints, cordon, affinity, resources, pod (anti-)affinity), the
default scores spreading a controller's Pods, and kube-scheduler's FailedScheduling text."""

from __future__ import annotations

from pykubeadm.scheduler.binder import choose_node, is_pending, unschedulable_message
from pykubeadm.scheduler.matching import tolerates
from pykubeadm.scheduler.nodeinfo import NodeInfo, pod_info

CP_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
NOT_READY = [
    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
]


def node(
    name: str, labels: dict | None = None, taints: list | None = None, unschedulable: bool = False, **alloc: str
) -> dict:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110", **alloc},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name: str = "p", labels: dict | None = None, owner: str = "", **spec: object) -> dict:
    meta: dict = {"name": name, "namespace": "default", "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "uid": owner, "controller": True}]
    return {"metadata": meta, "spec": {"containers": [{"name": "c"}], **spec}, "status": {"phase": "Pending"}}


def infos(*nodes: dict, placed: dict[str, list[dict]] | None = None) -> list[NodeInfo]:
    out = []
    for n in nodes:
        ni = NodeInfo(n)
        for p in (placed or {}).get(n["metadata"]["name"], []):
            ni.add(pod_info(p))
        out.append(ni)
    return out


def test_a_controllers_pods_spread_over_the_nodes() -> None:
    nodes = [node("w1"), node("w2"), node("w3")]
    placed: dict[str, list[dict]] = {}
    for i in range(6):
        p = pod(f"web-{i}", {"app": "web"}, owner="rs-uid")
        chosen = choose_node(p, infos(*nodes, placed=placed)).node
        assert chosen is not None
        placed.setdefault(chosen, []).append(p)
    assert sorted(len(v) for v in placed.values()) == [2, 2, 2]


def test_spreading_prefers_the_node_without_the_controllers_pods_over_a_less_loaded_one() -> None:
    # w1 has more Pods in total but none of this ReplicaSet's; w2 has one of ours
    placed = {"w1": [pod(f"other-{i}", owner="x") for i in range(2)], "w2": [pod("mine", owner="rs")]}
    assert choose_node(pod("new", owner="rs"), infos(node("w1"), node("w2"), placed=placed)).node == "w1"


def test_not_ready_node_is_kept_out_by_its_taints_and_tolerating_pods_still_land() -> None:
    nodes = infos(node("nr", taints=NOT_READY))
    decision = choose_node(pod(), nodes)
    assert decision.node is None
    assert unschedulable_message(1, decision.failures) == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    daemon = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
              {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}]  # fmt: skip
    assert choose_node(pod(tolerations=daemon), nodes).node == "nr"


def test_cordoned_node_is_skipped_unless_the_pod_tolerates_unschedulable() -> None:
    nodes = infos(node("a", unschedulable=True), node("b"))
    assert (
        choose_node(
            pod(),
            nodes,
        ).node
        == "b"
    )
    decision = choose_node(pod(), infos(node("a", unschedulable=True)))
    assert unschedulable_message(1, decision.failures).startswith(
        "0/1 nodes are available: 1 node(s) were unschedulable."
    )
    tol = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    assert choose_node(pod(tolerations=tol), infos(node("a", unschedulable=True))).node == "a"


def test_kube_message_for_control_plane_taint_and_selector() -> None:
    nodes = infos(node("cp", taints=[CP_TAINT]), node("w1"), node("w2"))
    decision = choose_node(pod(nodeSelector={"disk": "ssd"}), nodes)
    assert decision.node is None
    assert unschedulable_message(3, decision.failures) == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_node_affinity_and_prefer_no_schedule() -> None:
    nodes = infos(
        node("a", {"disk": "hdd"}), node("b", {"disk": "ssd"}, taints=[{"key": "x", "effect": "PreferNoSchedule"}])
    )
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}}  # fmt: skip
    assert choose_node(pod(affinity=affinity), nodes).node == "b"
    assert choose_node(pod(), nodes).node == "a"  # PreferNoSchedule taint scores b lower


def test_required_anti_affinity_on_hostname_and_resources() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "dns"}}, "topologyKey": "kubernetes.io/hostname"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    nodes = [node("w1"), node("w2")]
    first = pod("dns-1", {"app": "dns"}, affinity=anti)
    placed = {"w2": [first]}
    second = pod("dns-2", {"app": "dns"}, affinity=anti)
    assert choose_node(second, infos(*nodes, placed=placed)).node == "w1"
    placed["w1"] = [second]
    decision = choose_node(pod("dns-3", {"app": "dns"}, affinity=anti), infos(*nodes, placed=placed))
    assert decision.node is None
    assert unschedulable_message(2, decision.failures) == (
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )
    # symmetry: an existing Pod's anti-affinity keeps a matching newcomer (without terms of its own) away
    plain = choose_node(pod("plain", {"app": "dns"}), infos(node("w1"), node("w2"), placed={"w2": [first]}))
    assert plain.node == "w1"
    big = pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "3"}}}])
    full = infos(node("w1", pods="1"), node("w2"), placed={"w1": [pod("x")]})
    decision = choose_node(big, full)
    assert unschedulable_message(2, decision.failures).startswith(
        "0/2 nodes are available: 1 Too many pods, 2 Insufficient cpu."
    )


def test_toleration_matching_rules() -> None:
    taint = {"key": "k", "value": "v", "effect": "NoExecute"}
    assert tolerates([{"operator": "Exists"}], taint)
    assert tolerates([{"key": "k", "operator": "Equal", "value": "v"}], taint)
    assert tolerates([{"key": "k", "value": "v", "effect": "NoExecute"}], taint)
    assert not tolerates([{"key": "k", "value": "w"}], taint)
    assert not tolerates([{"key": "k", "operator": "Exists", "effect": "NoSchedule"}], taint)
    assert not tolerates([], taint)


def test_pending_pods() -> None:
    assert is_pending(pod())
    assert not is_pending(pod(nodeName="a"))
    assert not is_pending(pod(schedulerName="other"))
    done = pod()
    done["status"]["phase"] = "Succeeded"
    assert not is_pending(done)
