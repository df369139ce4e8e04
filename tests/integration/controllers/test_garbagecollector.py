"""garbagecollector and namespace controllers against our apiserver, driven with kubectl like a user.

Owners and dependents are ConfigMaps and Secrets linked by ownerReferences (the GC handles every kind discovery
serves), and a Deployment → ReplicaSet → Pod chain built by hand (no apps controllers running here).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from harness import ControllerManager, wait_until

from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

NS = "gc-test"


@pytest.fixture(scope="module")
def gc(api: ApiServer, start_kcm: Callable[..., ControllerManager]) -> ApiServer:
    api.kubectl("create", "namespace", NS)
    start_kcm(extra_flags=["--controllers=garbagecollector,namespace,serviceaccount"])
    wait_until(
        lambda: get(api, "serviceaccount", "default"), 20, interval=0.2, what="default ServiceAccount (Pods need it)"
    )
    return api


def get(api: ApiServer, kind: str, name: str, namespace: str = NS) -> dict[str, Any] | None:
    res = api.kubectl("get", kind, name, "-n", namespace, "-o", "json", "--ignore-not-found", check=False)
    return json.loads(res.stdout) if res.stdout.strip() else None


def apply(api: ApiServer, *docs: dict[str, Any]) -> None:
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def configmap(name: str, owners: list[dict[str, Any]] | None = None, **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NS, **meta}
    if owners:
        metadata["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}}


def secret(name: str, owners: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NS, "ownerReferences": owners},
        "stringData": {"k": "v"},
    }


def ref(obj: dict[str, Any], block: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "blockOwnerDeletion": block,
    }


def make_owner(api: ApiServer, name: str) -> dict[str, Any]:
    apply(api, configmap(name))
    owner = get(api, "configmap", name)
    assert owner is not None
    return owner


def gone(api: ApiServer, kind: str, name: str, namespace: str = NS) -> bool:
    return get(api, kind, name, namespace) is None


def test_background_delete_removes_dependents_of_any_kind(gc: ApiServer) -> None:
    owner = make_owner(gc, "owner-bg")
    apply(gc, secret("dep-bg-1", [ref(owner)]), configmap("dep-bg-2", [ref(owner, block=False)]))
    # a grandchild: owned by a dependent, so it goes when its own owner goes
    child = get(gc, "secret", "dep-bg-1")
    assert child is not None
    apply(gc, configmap("dep-bg-3", [ref(child)]))
    gc.kubectl("delete", "configmap", "owner-bg", "-n", NS, "--cascade=background")
    for kind, name in (("secret", "dep-bg-1"), ("configmap", "dep-bg-2"), ("configmap", "dep-bg-3")):
        wait_until(lambda kind=kind, name=name: gone(gc, kind, name), 20, interval=0.2, what=f"{kind}/{name} collected")


def test_dependent_of_absent_or_recreated_owner_is_collected(gc: ApiServer) -> None:
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "never-was", "uid": str(uuid.uuid4())}
    apply(gc, configmap("orphaned-at-birth", [ghost]))
    wait_until(lambda: gone(gc, "configmap", "orphaned-at-birth"), 20, interval=0.2, what="dangling dependent")
    # an owner of that name exists, but under another UID: the reference still dangles
    make_owner(gc, "same-name")
    stale = {"apiVersion": "v1", "kind": "ConfigMap", "name": "same-name", "uid": str(uuid.uuid4())}
    apply(gc, configmap("stale-ref", [stale]))
    wait_until(lambda: gone(gc, "configmap", "stale-ref"), 20, interval=0.2, what="uid-mismatch dependent")
    assert get(gc, "configmap", "same-name") is not None


def test_surviving_owner_keeps_the_dependent_and_only_the_dead_reference_goes(gc: ApiServer) -> None:
    alive = make_owner(gc, "owner-alive")
    doomed = make_owner(gc, "owner-doomed")
    apply(gc, configmap("two-owners", [ref(alive), ref(doomed)]))
    gc.kubectl("delete", "configmap", "owner-doomed", "-n", NS)

    def refs() -> list[str] | None:
        obj = get(gc, "configmap", "two-owners")
        assert obj is not None, "a dependent with a living owner must not be deleted"
        names = [r["name"] for r in obj["metadata"].get("ownerReferences") or []]
        return names if names == ["owner-alive"] else None

    wait_until(refs, 20, interval=0.2, what="dangling reference removed")


def test_namespace_deletion_removes_every_kind_then_the_namespace(gc: ApiServer) -> None:
    ns = "doomed-ns"
    gc.kubectl("create", "namespace", ns)
    gc.kubectl("create", "configmap", "c1", "-n", ns, "--from-literal=a=b")
    gc.kubectl("create", "secret", "generic", "s1", "-n", ns, "--from-literal=a=b")
    gc.kubectl("create", "serviceaccount", "sa1", "-n", ns)
    gc.kubectl("create", "role", "r1", "-n", ns, "--verb=get", "--resource=pods")
    gc.kubectl("create", "deployment", "d1", "-n", ns, "--image=registry.k8s.io/pause:3.10")
    gc.kubectl("create", "job", "j1", "-n", ns, "--image=busybox", "--", "true")
    gc.kubectl("create", "cronjob", "cj1", "-n", ns, "--image=busybox", "--schedule=@hourly", "--", "true")
    gc.kubectl("delete", "namespace", ns, "--wait=true", timeout=60)
    assert gone(gc, "namespace", ns, namespace="default")


def test_terminating_namespace_reports_what_holds_it(gc: ApiServer) -> None:
    ns = "held-ns"
    gc.kubectl("create", "namespace", ns)
    held = configmap("held", finalizers=["example.com/hold"])
    held["metadata"]["namespace"] = ns
    gc.kubectl("create", "configmap", "free", "-n", ns, "--from-literal=a=b")
    apply(gc, held)
    gc.kubectl("delete", "namespace", ns, "--wait=false")

    def conditions() -> dict[str, dict[str, Any]] | None:
        obj = get(gc, "namespace", ns, namespace="default")
        assert obj is not None
        conds = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
        return conds if conds.get("NamespaceFinalizersRemaining", {}).get("status") == "True" else None

    conds = wait_until(conditions, 20, interval=0.2, what="namespace conditions")
    assert obj_phase(gc, ns) == "Terminating"
    assert conds["NamespaceContentRemaining"]["reason"] == "SomeResourcesRemain"
    assert conds["NamespaceContentRemaining"]["message"] == (
        "Some resources are remaining: configmaps. has 1 resource instances"
    )
    assert conds["NamespaceFinalizersRemaining"]["reason"] == "SomeFinalizersRemain"
    assert conds["NamespaceFinalizersRemaining"]["message"] == (
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    )
    assert conds["NamespaceDeletionDiscoveryFailure"]["status"] == "False"
    assert conds["NamespaceDeletionDiscoveryFailure"]["reason"] == "ResourcesDiscovered"
    assert conds["NamespaceDeletionContentFailure"]["reason"] == "ContentDeleted"
    assert gone(gc, "configmap", "free", namespace=ns)
    gc.kubectl("patch", "configmap", "held", "-n", ns, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    wait_until(lambda: gone(gc, "namespace", ns, namespace="default"), 30, interval=0.2, what="namespace gone")


def obj_phase(api: ApiServer, ns: str) -> str:
    obj = get(api, "namespace", ns, namespace="default")
    return (obj or {}).get("status", {}).get("phase", "")


def test_foreground_delete_waits_for_blocking_dependents(gc: ApiServer) -> None:
    owner = make_owner(gc, "owner-fg")
    held = secret("dep-fg-held", [ref(owner)])
    held["metadata"]["finalizers"] = ["example.com/hold"]
    apply(gc, held, configmap("dep-fg-free", [ref(owner, block=False)]))
    gc.kubectl("delete", "configmap", "owner-fg", "-n", NS, "--cascade=foreground", "--wait=false")

    def owner_waiting() -> dict[str, Any] | None:
        obj = get(gc, "configmap", "owner-fg")
        assert obj is not None, "the owner went before its blocking dependent"
        dep = get(gc, "secret", "dep-fg-held")
        return obj if dep is not None and dep["metadata"].get("deletionTimestamp") else None

    obj = wait_until(owner_waiting, 20, interval=0.2, what="blocking dependent being deleted")
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["finalizers"] == ["foregroundDeletion"]
    gc.kubectl("patch", "secret", "dep-fg-held", "-n", NS, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    wait_until(lambda: gone(gc, "configmap", "owner-fg"), 20, interval=0.2, what="owner deleted last")
    assert gone(gc, "secret", "dep-fg-held")
    wait_until(lambda: gone(gc, "configmap", "dep-fg-free"), 20, interval=0.2, what="non-blocking dependent collected")


def test_orphan_delete_keeps_dependents_without_the_reference(gc: ApiServer) -> None:
    owner = make_owner(gc, "owner-or")
    other = make_owner(gc, "other-owner")
    apply(gc, secret("dep-or-1", [ref(owner)]), configmap("dep-or-2", [ref(owner), ref(other)]))
    gc.kubectl("delete", "configmap", "owner-or", "-n", NS, "--cascade=orphan")
    assert gone(gc, "configmap", "owner-or")
    dep1, dep2 = get(gc, "secret", "dep-or-1"), get(gc, "configmap", "dep-or-2")
    assert dep1 is not None and "ownerReferences" not in dep1["metadata"]
    assert dep2 is not None and [r["name"] for r in dep2["metadata"]["ownerReferences"]] == ["other-owner"]


def deployment_chain(api: ApiServer, name: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Deployment → ReplicaSet → Pod linked as the apps controllers link them (built by hand: none run here)."""
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "pause"}]}}
    apply(
        api,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template},
        },
    )
    deploy = get(api, "deployment", name)
    assert deploy is not None
    controller = {**ref(deploy), "controller": True}
    apply(
        api,
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": f"{name}-rs", "namespace": NS, "labels": labels, "ownerReferences": [controller]},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template},
        },
    )
    rs = get(api, "replicaset", f"{name}-rs")
    assert rs is not None
    apply(
        api,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-pod",
                "namespace": NS,
                "labels": labels,
                "ownerReferences": [{**ref(rs), "controller": True}],
            },
            "spec": template["spec"],
        },
    )
    pod = get(api, "pod", f"{name}-pod")
    assert pod is not None
    return deploy, rs, pod


@pytest.mark.parametrize("cascade", ["background", "foreground"])
def test_deleting_a_deployment_removes_its_replicasets_and_pods(gc: ApiServer, cascade: str) -> None:
    name = f"web-{cascade[:2]}"
    deployment_chain(gc, name)
    gc.kubectl("delete", "deployment", name, "-n", NS, f"--cascade={cascade}", timeout=60)
    if cascade == "foreground":  # kubectl waited for the Deployment, which went last
        assert gone(gc, "replicaset", f"{name}-rs") and gone(gc, "pod", f"{name}-pod")
    wait_until(lambda: gone(gc, "replicaset", f"{name}-rs"), 20, interval=0.2, what="replicaset collected")
    wait_until(lambda: gone(gc, "pod", f"{name}-pod"), 20, interval=0.2, what="pod collected")


def test_orphaning_a_deployment_leaves_its_replicaset_and_pods(gc: ApiServer) -> None:
    _, rs, _ = deployment_chain(gc, "web-or")
    gc.kubectl("delete", "deployment", "web-or", "-n", NS, "--cascade=orphan")
    assert gone(gc, "deployment", "web-or")
    left = get(gc, "replicaset", "web-or-rs")
    assert left is not None and "ownerReferences" not in left["metadata"]
    pod = get(gc, "pod", "web-or-pod")
    assert pod is not None and [r["uid"] for r in pod["metadata"]["ownerReferences"]] == [rs["metadata"]["uid"]]
