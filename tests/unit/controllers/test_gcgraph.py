"""The garbage collector's graph and decisions, and the namespace controller's conditions, without an apiserver."""

from __future__ import annotations

from datetime import UTC, datetime

from pykubeadm.controllers.app.manager import CONTROLLERS, enabled_controllers
from pykubeadm.controllers.batchutil import ApiPath
from pykubeadm.controllers.garbagecollector.graph import Graph, Node, OwnerState, decide
from pykubeadm.controllers.namespace.controller import content_conditions, merge_conditions

CM = ApiPath("", "v1", "configmaps", "ConfigMap", True, frozenset({"list", "watch", "delete"}))
PODS = ApiPath("", "v1", "pods", "Pod", True)
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def node(uid: str, owners: list[dict] | None = None, finalizers: tuple[str, ...] = (), deleting: bool = False) -> Node:
    return Node(CM, "ns", uid, uid, owners=owners or [], finalizers=finalizers, deleting=deleting)


def ref(uid: str, block: bool = True) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": uid, "uid": uid, "blockOwnerDeletion": block}


def test_decisions() -> None:
    dep = node("d", [ref("a"), ref("b")])
    # a solid owner keeps the object; dangling and waiting references are dropped
    d = decide(dep, [(ref("a"), OwnerState.SOLID), (ref("b"), OwnerState.DANGLING)], False)
    assert (d.delete, d.remove_refs) == (False, ("b",))
    assert decide(dep, [(ref("a"), OwnerState.SOLID), (ref("b"), OwnerState.SOLID)], False).remove_refs == ()
    # no owner left: background delete (or as the object's own finalizers say)
    d = decide(dep, [(ref("a"), OwnerState.DANGLING), (ref("b"), OwnerState.DANGLING)], False)
    assert (d.delete, d.policy) == (True, "Background")
    assert decide(node("d", [ref("a")], ("orphan",)), [(ref("a"), OwnerState.DANGLING)], False).policy == "Orphan"
    # an owner deleted in the foreground: a dependent with its own dependents goes in the foreground too
    assert decide(dep, [(ref("a"), OwnerState.WAITING)], True).policy == "Foreground"
    assert decide(dep, [(ref("a"), OwnerState.WAITING)], False).policy == "Background"


def test_graph_edges_follow_owner_references() -> None:
    g = Graph()
    g.upsert(node("owner", finalizers=("foregroundDeletion",), deleting=True))
    g.upsert(node("blocker", [ref("owner")]))
    g.upsert(node("free", [ref("owner", block=False)]))
    assert g.nodes["owner"].deleting_dependents
    assert [n.uid for n in g.dependents("owner")] == ["blocker", "free"]
    assert [n.uid for n in g.blocking_dependents("owner")] == ["blocker"]
    g.upsert(node("blocker", []))  # its reference was removed
    assert [n.uid for n in g.dependents("owner")] == ["free"]
    g.remove("free")
    assert g.dependents("owner") == []
    assert g.dependents("never-seen") == []


def test_namespace_conditions_as_kube_writes_them() -> None:
    found = content_conditions({}, [], {PODS: 2, CM: 1}, {"example.com/x": 1, "kubernetes.io/pvc-protection": 3})
    conds = {c["type"]: c for c in merge_conditions([], found, T0)}
    assert list(conds) == [
        "NamespaceDeletionDiscoveryFailure",
        "NamespaceDeletionGroupVersionParsingFailure",
        "NamespaceDeletionContentFailure",
        "NamespaceContentRemaining",
        "NamespaceFinalizersRemaining",
    ]
    assert conds["NamespaceContentRemaining"] == {
        "type": "NamespaceContentRemaining",
        "status": "True",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
        "reason": "SomeResourcesRemain",
        "message": "Some resources are remaining: configmaps. has 1 resource instances, pods. has 2 resource instances",
    }
    assert conds["NamespaceFinalizersRemaining"]["message"] == (
        "Some content in the namespace has finalizers remaining: example.com/x in 1 resource instances, "
        "kubernetes.io/pvc-protection in 3 resource instances"
    )
    ok = conds["NamespaceDeletionContentFailure"]
    assert (ok["status"], ok["reason"], ok["message"]) == (
        "False",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    )
    # an unchanged condition keeps its transition time; a changed one gets a new one
    later = datetime(2024, 1, 1, 0, 5, tzinfo=UTC)
    again = {c["type"]: c for c in merge_conditions(list(conds.values()), content_conditions({}, [], {}, {}), later)}
    assert again["NamespaceDeletionContentFailure"]["lastTransitionTime"] == "2024-01-01T00:00:00Z"
    assert again["NamespaceContentRemaining"]["status"] == "False"
    assert again["NamespaceContentRemaining"]["reason"] == "ContentRemoved"
    assert again["NamespaceContentRemaining"]["lastTransitionTime"] == "2024-01-01T00:05:00Z"


def test_namespace_failure_conditions() -> None:
    found = content_conditions({"metrics.k8s.io/v1beta1": "503"}, ['failed to delete pods.: "boom"'], {}, {})
    status, reason, message = found["NamespaceDeletionDiscoveryFailure"]
    assert (status, reason) == ("True", "DiscoveryFailed")
    assert message.startswith("Discovery failed for some groups, 1 failing: ")
    status, reason, message = found["NamespaceDeletionContentFailure"]
    assert (status, reason) == ("True", "ContentDeletionFailed")
    assert message == 'Failed to delete all resource types, 1 remaining: failed to delete pods.: "boom"'


def test_each_controller_is_on_by_default_and_can_be_switched_off() -> None:
    names = {
        "job": "job-controller",
        "cronjob": "cronjob-controller",
        "ttl-after-finished": "ttl-after-finished-controller",
        "garbagecollector": "garbage-collector-controller",
        "namespace": "namespace-controller",
    }
    everything = enabled_controllers(["*"])
    for name, long_name in names.items():
        assert name in CONTROLLERS and name in everything
        assert name not in enabled_controllers(["*", f"-{name}"])
        assert name not in enabled_controllers(["*", f"-{long_name}"])
        assert enabled_controllers([long_name]) & set(CONTROLLERS) == {name}
