"""The scheduler's VolumeBinding decisions: PreFilter messages, the Node filter and the pre-bind plan."""

from __future__ import annotations

from typing import Any

from pykubeadm.scheduler.binder import unschedulable_message
from pykubeadm.scheduler.volumebinding import ERR_AFFINITY_CONFLICT, ERR_NO_VOLUME, ERR_UNBOUND_IMMEDIATE, pre_filter

WFFC_LOCAL = {"metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner",
              "volumeBindingMode": "WaitForFirstConsumer"}  # fmt: skip
WFFC_DYNAMIC = {"metadata": {"name": "standard"}, "provisioner": "rancher.io/local-path",
                "volumeBindingMode": "WaitForFirstConsumer"}  # fmt: skip
IMMEDIATE = {"metadata": {"name": "fast"}, "provisioner": "example.com/fast", "volumeBindingMode": "Immediate"}
CLASSES = {sc["metadata"]["name"]: sc for sc in (WFFC_LOCAL, WFFC_DYNAMIC, IMMEDIATE)}


def node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}


def local_pv(name: str, on: str, claim_ref: dict | None = None) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [on]}]}
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "local",
        "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
    }
    if claim_ref:
        spec["claimRef"] = claim_ref
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": "Available"}}


def claim(name: str, cls: str, volume: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                            "storageClassName": cls}  # fmt: skip
    if volume:
        spec["volumeName"] = volume
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return {"metadata": meta, "spec": spec}


def pod(*claims: str, ephemeral: str = "") -> dict[str, Any]:
    volumes: list[dict[str, Any]] = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    if ephemeral:
        volumes.append({"name": ephemeral, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}})
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": {"volumes": volumes}}


def run(p: dict, claims: list[dict], volumes: list[dict] = ()):  # type: ignore[assignment]
    by_name = {c["metadata"]["name"]: c for c in claims}
    pvs = {v["metadata"]["name"]: v for v in volumes}
    return pre_filter(p, by_name.get, CLASSES.get, pvs.get)


def never_taken(name: str) -> bool:
    return False


def test_missing_and_immediate_unbound_claims_keep_the_pod_off_every_node() -> None:
    assert run(pod("gone"), []) == (None, 'persistentvolumeclaim "gone" not found')
    assert run(pod(ephemeral="tmp"), [])[1] == (
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-tmp"'
    )
    assert run(pod("a"), [claim("a", "fast")]) == (None, ERR_UNBOUND_IMMEDIATE)
    assert unschedulable_message(2, {}, pre_filter=ERR_UNBOUND_IMMEDIATE) == (
        "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are "
        "available: 2 Preemption is not helpful for scheduling."
    )


def test_a_bound_local_volume_pins_the_pod_to_its_node() -> None:
    pv = local_pv("pv1", "n2", {"namespace": "default", "name": "a", "uid": "uid-a"})
    volumes, message = run(pod("a"), [claim("a", "local", volume="pv1")], [pv])
    assert volumes is not None and message == ""
    assert volumes.filter(node("n1"), [pv], never_taken) == ERR_AFFINITY_CONFLICT
    assert volumes.filter(node("n2"), [pv], never_taken) is None


def test_wait_for_first_consumer_needs_a_free_local_volume_on_the_node() -> None:
    pvs = [local_pv("on-n1", "n1"), local_pv("on-n2", "n2")]
    volumes, _ = run(pod("a", "b"), [claim("a", "local"), claim("b", "local")], pvs)
    assert volumes is not None
    assert volumes.filter(node("n1"), pvs, never_taken) == ERR_NO_VOLUME  # two claims, one volume there
    more = [*pvs, local_pv("also-n1", "n1")]
    plan = volumes.plan(node("n1"), more, never_taken)
    assert plan is not None
    assert sorted(v["metadata"]["name"] for _, v in plan if v) == ["also-n1", "on-n1"]
    assert volumes.filter(node("n1"), more, lambda name: name == "also-n1") == ERR_NO_VOLUME  # assumed elsewhere


def test_a_class_with_a_provisioner_fits_any_node_and_is_provisioned() -> None:
    volumes, _ = run(pod("a"), [claim("a", "standard")])
    assert volumes is not None
    assert volumes.filter(node("n1"), [], never_taken) is None
    assert volumes.plan(node("n1"), [], never_taken) == [(claim("a", "standard"), None)]
