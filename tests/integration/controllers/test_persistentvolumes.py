"""The persistent-volume controllers in a real kube-controller-manager against our apiserver, checked with kubectl:
binding and phases, reclaim, hand-off to an external provisioner, the default StorageClass, the protection
finalizers and generic ephemeral volumes."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from harness import ControllerManager, wait_until
from lightkube import Client
from lightkube.resources.core_v1 import Event, PersistentVolume, PersistentVolumeClaim, Pod
from test_scheduler import scheduler  # noqa: F401  (the scheduler process fixture)
from workloads import add_ready_node

from pykubeadm.client import ApiError, sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

NS = "default"


@pytest.fixture(scope="module")
def kcm(api: ApiServer, start_kcm: Any) -> ControllerManager:
    return start_kcm(extra_flags=["--controllers=*,-nodelifecycle,-taint-eviction-controller"])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def admin(api: ApiServer) -> Client:
    return sync_client(api.kubeconfig())


def apply(api: ApiServer, *docs: dict[str, Any]) -> None:
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def volume(name: str, size: str = "1Gi", cls: str = "manual", policy: str = "Retain") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": policy,
            "storageClassName": cls,
            "hostPath": {"path": f"/tmp/{name}"},
        },
    }


def claim(name: str, size: str = "1Gi", cls: str | None = "manual") -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if cls is not None:
        spec["storageClassName"] = cls
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": NS},
            "spec": spec}  # fmt: skip


def phase_of(admin: Client, res: type, name: str) -> str | None:
    try:
        obj = admin.get(res, name, namespace=NS) if res is PersistentVolumeClaim else admin.get(res, name)
    except ApiError:
        return None
    return obj.status.phase if obj.status else None


def events_of(admin: Client, name: str) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in admin.list(Event, namespace=NS) if e.involvedObject.name == name]


def test_a_claim_binds_the_smallest_matching_volume_and_releases_it(
    api: ApiServer, kcm: ControllerManager, admin: Client
) -> None:
    apply(api, volume("pv-big", "5Gi"), volume("pv-fit", "2Gi"), volume("pv-other", "2Gi", cls="other"))
    apply(api, claim("data", "1500Mi"))
    wait_until(lambda: phase_of(admin, PersistentVolumeClaim, "data") == "Bound", 30, what="claim Bound")
    pvc = admin.get(PersistentVolumeClaim, "data", namespace=NS)
    assert pvc.spec.volumeName == "pv-fit"
    assert pvc.status.capacity == {"storage": "2Gi"} and pvc.status.accessModes == ["ReadWriteOnce"]
    assert pvc.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert "kubernetes.io/pvc-protection" in pvc.metadata.finalizers
    wait_until(lambda: phase_of(admin, PersistentVolume, "pv-fit") == "Bound", 30, what="volume Bound")
    pv = admin.get(PersistentVolume, "pv-fit")
    assert (pv.spec.claimRef.name, pv.spec.claimRef.uid) == ("data", pvc.metadata.uid)
    assert "kubernetes.io/pv-protection" in pv.metadata.finalizers
    out = api.kubectl("get", "pvc", "data").stdout
    assert "Bound" in out and "pv-fit" in out
    assert phase_of(admin, PersistentVolume, "pv-big") == "Available"

    admin.delete(PersistentVolumeClaim, "data", namespace=NS)
    wait_until(lambda: phase_of(admin, PersistentVolume, "pv-fit") == "Released", 30, what="volume Released")
    assert admin.get(PersistentVolume, "pv-fit").spec.claimRef.name == "data"  # Retain keeps the volume as it is
    # a Released volume is not bound again
    apply(api, claim("data2", "1500Mi"))
    wait_until(lambda: phase_of(admin, PersistentVolumeClaim, "data2") == "Bound", 30, what="second claim Bound")
    assert admin.get(PersistentVolumeClaim, "data2", namespace=NS).spec.volumeName == "pv-big"


def test_a_claim_nothing_matches_stays_pending_and_a_prebound_one_binds(
    api: ApiServer, kcm: ControllerManager, admin: Client
) -> None:
    apply(api, claim("nomatch", "100Gi", cls=""))
    wait_until(
        lambda: (
            ("FailedBinding", "no persistent volumes available for this claim and no storage class is set")
            in events_of(admin, "nomatch")
        ),
        30,
        what="FailedBinding event",
    )
    assert phase_of(admin, PersistentVolumeClaim, "nomatch") == "Pending"
    wanted = claim("wants", "1Gi")
    wanted["spec"]["volumeName"] = "pv-asked"
    apply(api, wanted)
    apply(api, volume("pv-asked", "3Gi"))
    wait_until(lambda: phase_of(admin, PersistentVolumeClaim, "wants") == "Bound", 30, what="pre-bound claim Bound")
    assert admin.get(PersistentVolume, "pv-asked").spec.claimRef.name == "wants"


def test_a_class_with_a_provisioner_hands_the_claim_over(api: ApiServer, kcm: ControllerManager, admin: Client) -> None:
    apply(
        api,
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "ext", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "example.com/ext",
            "volumeBindingMode": "Immediate",
        },
    )
    wait_until(lambda: "ext (default)" in api.kubectl("get", "sc").stdout, 10, what="default class listed")
    apply(api, claim("ask", cls=None))  # no class: the DefaultStorageClass admission picks ext
    pvc = admin.get(PersistentVolumeClaim, "ask", namespace=NS)
    assert pvc.spec.storageClassName == "ext"

    def handed_over() -> bool:
        ann = admin.get(PersistentVolumeClaim, "ask", namespace=NS).metadata.annotations or {}
        return ann.get("volume.kubernetes.io/storage-provisioner") == "example.com/ext" and (
            ann.get("volume.beta.kubernetes.io/storage-provisioner") == "example.com/ext"
        )

    wait_until(handed_over, 30, what="provisioner annotations")
    message = (
        "Waiting for a volume to be created either by the external provisioner 'example.com/ext' or manually by the "
        "system administrator. If volume creation is delayed, please verify that the provisioner is running and "
        "correctly registered."
    )
    wait_until(lambda: ("ExternalProvisioning", message) in events_of(admin, "ask"), 30, what="event")
    # the provisioner's volume, pre-bound to the claim, completes the binding; Delete leaves it to the provisioner
    made = volume("pvc-made", cls="ext", policy="Delete")
    made["metadata"]["annotations"] = {"pv.kubernetes.io/provisioned-by": "example.com/ext"}
    made["spec"]["claimRef"] = {"namespace": NS, "name": "ask", "uid": pvc.metadata.uid}
    apply(api, made)
    wait_until(lambda: phase_of(admin, PersistentVolumeClaim, "ask") == "Bound", 30, what="provisioned claim Bound")
    admin.delete(PersistentVolumeClaim, "ask", namespace=NS)
    wait_until(lambda: phase_of(admin, PersistentVolume, "pvc-made") == "Released", 30, what="Released")
    admin.delete(PersistentVolume, "pvc-made")  # as the provisioner does once its storage is gone
    wait_until(lambda: phase_of(admin, PersistentVolume, "pvc-made") is None, 30, what="volume gone")


def test_a_claim_in_use_is_kept_until_its_pod_is_gone_and_ephemeral_claims_follow_their_pod(
    api: ApiServer, kcm: ControllerManager, admin: Client
) -> None:
    apply(api, volume("pv-used"), claim("used"))
    wait_until(lambda: phase_of(admin, PersistentVolumeClaim, "used") == "Bound", 30, what="claim Bound")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "user", "namespace": NS},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "used"}},
                {
                    "name": "scratch",
                    "ephemeral": {
                        "volumeClaimTemplate": {
                            "metadata": {"labels": {"kind": "scratch"}},
                            "spec": {
                                "accessModes": ["ReadWriteOnce"],
                                "storageClassName": "manual",
                                "resources": {"requests": {"storage": "1Gi"}},
                            },
                        }
                    },
                },
            ],
        },
    }
    apply(api, pod)
    user = admin.get(Pod, "user", namespace=NS)
    scratch = wait_until(
        lambda: next(iter(admin.list(PersistentVolumeClaim, namespace=NS, labels={"kind": "scratch"})), None),
        30,
        what="ephemeral claim",
    )
    assert scratch.metadata.name == "user-scratch"
    (ref,) = scratch.metadata.ownerReferences
    assert (ref.kind, ref.name, ref.uid, ref.controller) == ("Pod", "user", user.metadata.uid, True)

    api.kubectl("delete", "pvc", "used", "--wait=false")
    pvc = admin.get(PersistentVolumeClaim, "used", namespace=NS)
    assert pvc.metadata.deletionTimestamp and "kubernetes.io/pvc-protection" in pvc.metadata.finalizers
    assert "Terminating" in api.kubectl("get", "pvc", "used").stdout
    # an unused claim deleted afterwards goes (the controller got that far), the used one stays while its Pod lives
    api.kubectl("delete", "pvc", "nomatch", "--wait=false")
    wait_until(lambda: phase_of(admin, PersistentVolumeClaim, "nomatch") is None, 30, what="unused claim removed")
    assert admin.get(PersistentVolumeClaim, "used", namespace=NS).metadata.deletionTimestamp
    admin.delete(Pod, "user", namespace=NS, grace_period=0)
    wait_until(lambda: phase_of(admin, PersistentVolumeClaim, "used") is None, 30, what="claim removed")
    wait_until(lambda: phase_of(admin, PersistentVolumeClaim, "user-scratch") is None, 60, what="ephemeral claim GC'd")


def local_volume(name: str, node: str) -> dict[str, Any]:
    body = volume(name, cls="local-wffc")
    del body["spec"]["hostPath"]
    body["spec"]["local"] = {"path": f"/mnt/{name}"}
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
    body["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    return body


def claim_pod(name: str, *claims: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}],
            "volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims],
        },
    }


def test_the_scheduler_binds_wait_for_first_consumer_claims_on_the_chosen_node(
    api: ApiServer,
    kcm: ControllerManager,
    admin: Client,
    scheduler: Any,  # noqa: F811
) -> None:
    for n in ("vb-1", "vb-2"):
        add_ready_node(admin, n, labels={"kubernetes.io/hostname": n})
    apply(
        api,
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local-wffc"},
         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "dyn-wffc"},
         "provisioner": "example.com/dyn", "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "dyn-now"},
         "provisioner": "example.com/dyn", "volumeBindingMode": "Immediate"},
    )  # fmt: skip
    apply(api, local_volume("lv-2", "vb-2"), claim("wffc", cls="local-wffc"))
    wait_until(
        lambda: (
            ("WaitForFirstConsumer", "waiting for first consumer to be created before binding")
            in events_of(admin, "wffc")
        ),
        30,
        what="WaitForFirstConsumer event",
    )
    assert phase_of(admin, PersistentVolumeClaim, "wffc") == "Pending"
    apply(api, claim_pod("local-user", "wffc"))
    wait_until(lambda: admin.get(Pod, "local-user", namespace=NS).spec.nodeName, 30, what="pod bound")
    assert admin.get(Pod, "local-user", namespace=NS).spec.nodeName == "vb-2"  # where its volume is
    assert admin.get(PersistentVolumeClaim, "wffc", namespace=NS).spec.volumeName == "lv-2"

    # a class with a provisioner: the claim learns the chosen node, the Pod waits for the provisioned volume
    apply(api, claim("dyn", cls="dyn-wffc"), claim_pod("dyn-user", "dyn"))

    def selected() -> str | None:
        ann = admin.get(PersistentVolumeClaim, "dyn", namespace=NS).metadata.annotations or {}
        return ann.get("volume.kubernetes.io/selected-node")

    node = wait_until(selected, 30, what="selected-node annotation")
    assert node in ("vb-1", "vb-2") and not admin.get(Pod, "dyn-user", namespace=NS).spec.nodeName
    made = local_volume("pvc-dyn", node)
    made["spec"]["storageClassName"] = "dyn-wffc"
    made["spec"]["claimRef"] = {"namespace": NS, "name": "dyn",
                                "uid": admin.get(PersistentVolumeClaim, "dyn", namespace=NS).metadata.uid}  # fmt: skip
    apply(api, made)
    wait_until(lambda: admin.get(Pod, "dyn-user", namespace=NS).spec.nodeName == node, 30, what="pod bound after")

    # an unbound Immediate claim keeps its Pod Pending with the scheduler's message
    apply(api, claim("now", cls="dyn-now"), claim_pod("now-user", "now"))

    def unschedulable() -> str | None:
        conds = admin.get(Pod, "now-user", namespace=NS).status.conditions or []
        return next((c.message for c in conds if c.type == "PodScheduled" and c.status == "False"), None)

    message = wait_until(unschedulable, 30, what="PodScheduled=False")
    assert message.startswith("0/") and "pod has unbound immediate PersistentVolumeClaims." in message
