"""The scheduler's placement decision: filters (Ready, selector, affinity, taints) and fewest-Pods scoring."""

from __future__ import annotations

from pykubeadm.scheduler.binder import choose_node, is_pending, tolerates, unschedulable_message


def node(
    name: str, ready: bool = True, labels: dict | None = None, taints: list | None = None, unschedulable: bool = False
) -> dict:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pod(**spec: object) -> dict:
    return {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c"}], **spec},
        "status": {"phase": "Pending"},
    }


CP_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def test_fewest_pods_wins_ties_by_name() -> None:
    nodes = [node("b"), node("a"), node("c")]
    assert choose_node(pod(), nodes, {"a": 3, "b": 1, "c": 1})[0] == "b"
    assert choose_node(pod(), nodes, {})[0] == "a"


def test_not_ready_and_unschedulable_nodes_are_skipped() -> None:
    chosen, reasons = choose_node(pod(), [node("a", ready=False), node("b", unschedulable=True), node("c")], {"c": 9})
    assert chosen == "c"
    assert reasons == {"node(s) were not ready": 1, "node(s) were unschedulable": 1}


def test_node_selector_and_affinity() -> None:
    nodes = [node("a", labels={"disk": "hdd"}), node("b", labels={"disk": "ssd"})]
    assert choose_node(pod(nodeSelector={"disk": "ssd"}), nodes, {"b": 5})[0] == "b"
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "NotIn", "values": ["ssd"]}]}]
            }
        }
    }
    assert choose_node(pod(affinity=affinity), nodes, {"a": 5})[0] == "a"
    chosen, reasons = choose_node(pod(nodeSelector={"gpu": "yes"}), nodes, {})
    assert chosen is None
    assert unschedulable_message(2, reasons) == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    )


def test_taints_and_tolerations() -> None:
    nodes = [
        node("cp", taints=[CP_TAINT]),
        node("w", taints=[{"key": "x", "value": "y", "effect": "PreferNoSchedule"}]),
    ]
    assert choose_node(pod(), nodes, {"w": 10})[0] == "w"
    tol = [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}]
    assert choose_node(pod(tolerations=tol), nodes, {"w": 10})[0] == "cp"
    chosen, reasons = choose_node(pod(), [node("cp", taints=[CP_TAINT])], {})
    assert chosen is None
    assert reasons == {"node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }": 1}


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
