"""The storage admission plugins kube-apiserver enables by default: DefaultStorageClass and StorageObjectInUseProtection.

* DefaultStorageClass: a PersistentVolumeClaim created without `spec.storageClassName` (and without the beta
  `volume.beta.kubernetes.io/storage-class` annotation) gets the default StorageClass (annotated
  `storageclass.kubernetes.io/is-default-class: "true"`; with several, the newest). `""` is an explicit choice of no
  class and is left alone.
* StorageObjectInUseProtection: new claims get the `kubernetes.io/pvc-protection` finalizer and new volumes the
  `kubernetes.io/pv-protection` finalizer, which the pvc-protection and pv-protection controllers remove once the
  object is no longer in use.
"""

from __future__ import annotations

from pykubeadm import constants as c
from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation
from pykubeadm.apiserver.objects import ObjectSource
from pykubeadm.util.storageclass import default_class

__all__ = ["DefaultStorageClass", "StorageObjectInUseProtection"]

STORAGE_CLASSES = "storageclasses.storage.k8s.io"


def _creating(attrs: AdmissionAttributes, resource: str) -> bool:
    return (
        attrs.operation is Operation.CREATE
        and not attrs.group
        and attrs.resource == resource
        and not attrs.subresource
        and isinstance(attrs.obj, dict)
    )


class DefaultStorageClass:
    name = "DefaultStorageClass"

    def __init__(self, source: ObjectSource):
        self._source = source

    def handles(self, op: Operation) -> bool:
        return op is Operation.CREATE

    async def admit(self, attrs: AdmissionAttributes) -> None:
        if not _creating(attrs, "persistentvolumeclaims"):
            return
        assert attrs.obj is not None
        spec = attrs.obj.setdefault("spec", {})
        annotations = (attrs.obj.get("metadata") or {}).get("annotations") or {}
        if spec.get("storageClassName") is not None or "volume.beta.kubernetes.io/storage-class" in annotations:
            return
        found = default_class(await self._source.list(STORAGE_CLASSES))
        if found is not None:
            spec["storageClassName"] = found["metadata"]["name"]


class StorageObjectInUseProtection:
    name = "StorageObjectInUseProtection"

    def handles(self, op: Operation) -> bool:
        return op is Operation.CREATE

    async def admit(self, attrs: AdmissionAttributes) -> None:
        for resource, finalizer in (
            ("persistentvolumeclaims", c.PVC_PROTECTION_FINALIZER),
            ("persistentvolumes", c.PV_PROTECTION_FINALIZER),
        ):
            if _creating(attrs, resource):
                assert attrs.obj is not None
                meta = attrs.obj.setdefault("metadata", {})
                finalizers = list(meta.get("finalizers") or [])
                if finalizer not in finalizers:
                    meta["finalizers"] = [*finalizers, finalizer]
