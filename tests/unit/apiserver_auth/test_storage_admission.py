"""DefaultStorageClass and StorageObjectInUseProtection: the default class and the protection finalizers on create."""

from __future__ import annotations

from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation
from pykubeadm.apiserver.admission.storage import DefaultStorageClass, StorageObjectInUseProtection
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.objects import DictObjectSource

ADMIN = UserInfo("kubernetes-admin", groups=("system:authenticated",))
CLASSES = "storageclasses.storage.k8s.io"


def create(resource: str, obj: dict) -> AdmissionAttributes:
    return AdmissionAttributes(Operation.CREATE, resource, ADMIN, namespace="default", name="x", obj=obj)


def source_with_default() -> DictObjectSource:
    source = DictObjectSource()
    source.put(CLASSES, {"metadata": {"name": "slow"}})
    ann = {"storageclass.kubernetes.io/is-default-class": "true"}
    source.put(CLASSES, {"metadata": {"name": "standard", "annotations": ann}})
    return source


async def test_a_claim_without_a_class_gets_the_default_one() -> None:
    plugin = DefaultStorageClass(source_with_default())
    claim: dict = {"metadata": {"name": "x"}, "spec": {}}
    await plugin.admit(create("persistentvolumeclaims", claim))
    assert claim["spec"]["storageClassName"] == "standard"


async def test_an_explicit_class_and_the_empty_class_are_kept() -> None:
    plugin = DefaultStorageClass(source_with_default())
    for chosen in ("slow", ""):
        claim: dict = {"metadata": {"name": "x"}, "spec": {"storageClassName": chosen}}
        await plugin.admit(create("persistentvolumeclaims", claim))
        assert claim["spec"]["storageClassName"] == chosen


async def test_no_default_class_leaves_the_claim_without_one() -> None:
    source = DictObjectSource()
    source.put(CLASSES, {"metadata": {"name": "slow"}})
    claim: dict = {"metadata": {"name": "x"}, "spec": {}}
    await DefaultStorageClass(source).admit(create("persistentvolumeclaims", claim))
    assert "storageClassName" not in claim["spec"]


async def test_claims_and_volumes_get_their_protection_finalizer_once() -> None:
    plugin = StorageObjectInUseProtection()
    claim: dict = {"metadata": {"name": "x", "finalizers": ["kubernetes.io/pvc-protection"]}, "spec": {}}
    volume: dict = {"metadata": {"name": "v"}, "spec": {}}
    await plugin.admit(create("persistentvolumeclaims", claim))
    await plugin.admit(create("persistentvolumes", volume))
    assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert volume["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
