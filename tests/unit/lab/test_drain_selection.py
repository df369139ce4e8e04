"""Which Pods `lab upgrade`'s drain evicts: kubectl drain's filters (DaemonSet, mirror, local storage, unreplicated)."""

from __future__ import annotations

from typing import Any

from lightkube.resources.core_v1 import Pod

from pykubeadm.lab.drain import DrainOptions, pods_for_deletion


def pod(name: str, owner: str | None = "ReplicaSet", phase: str = "Running", **extra: Any) -> Pod:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner, "name": "x", "uid": "u", "controller": True}
        ]
    if extra.get("mirror"):
        meta["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if extra.get("empty_dir"):
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return Pod.from_dict({"metadata": meta, "spec": spec, "status": {"phase": phase}})


def names(pods: list[Pod]) -> list[str]:
    return [p.metadata.name for p in pods if p.metadata and p.metadata.name]


def test_replicated_pods_are_evicted_daemonset_and_mirror_pods_left() -> None:
    sel = pods_for_deletion(
        [pod("web-1"), pod("kube-proxy-x", owner="DaemonSet"), pod("kube-apiserver-n1", owner="Node", mirror=True)],
        DrainOptions(),
    )
    assert names(sel.pods) == ["web-1"]
    assert sel.errors == {}
    assert sel.warning() == "ignoring DaemonSet-managed Pods: default/kube-proxy-x"  # the mirror Pod: silently


def test_without_ignore_daemonsets_a_daemonset_pod_refuses_the_drain() -> None:
    sel = pods_for_deletion([pod("web-1"), pod("ds-1", owner="DaemonSet")], DrainOptions(ignore_daemonsets=False))
    assert sel.error() == "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): default/ds-1"


def test_local_storage_and_bare_pods_need_kubectls_override_flags() -> None:
    pods = [pod("cache", empty_dir=True), pod("bare", owner=None), pod("done", owner=None, phase="Succeeded")]
    sel = pods_for_deletion(pods, DrainOptions())
    assert names(sel.pods) == ["done"]  # a terminal Pod goes without --force
    assert sel.errors == {
        "cannot delete Pods with local storage (use --delete-emptydir-data to override)": ["default/cache"],
        "cannot delete Pods that declare no controller (use --force to override)": ["default/bare"],
    }
    sel = pods_for_deletion(pods, DrainOptions(delete_emptydir_data=True, force=True))
    assert names(sel.pods) == ["cache", "bare", "done"]
    assert sel.warnings == {
        "deleting Pods with local storage": ["default/cache"],
        "deleting Pods that declare no controller": ["default/bare"],
    }
