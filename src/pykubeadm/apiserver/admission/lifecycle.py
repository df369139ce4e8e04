"""NamespaceLifecycle admission: no new objects in missing or terminating namespaces; immortal namespaces stay.

Mutating-phase plugin (as in kube-apiserver) so it rejects before any other work. Namespaces are read through the
ObjectSource.
"""

from __future__ import annotations

from pykubeadm import constants
from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation, forbidden, not_found
from pykubeadm.apiserver.objects import ObjectSource

__all__ = ["IMMORTAL_NAMESPACES", "NamespaceLifecycle"]

#: Namespaces that may never be deleted.
IMMORTAL_NAMESPACES = frozenset({constants.NAMESPACE_DEFAULT, constants.NAMESPACE_SYSTEM, constants.NAMESPACE_PUBLIC})
# Namespaced access reviews are always admitted: "namespace not found" would leak which namespaces exist.
_ACCESS_REVIEWS = frozenset({("authorization.k8s.io", "localsubjectaccessreviews")})


class NamespaceLifecycle:
    name = "NamespaceLifecycle"

    def __init__(self, source: ObjectSource, immortal: frozenset[str] = IMMORTAL_NAMESPACES):
        self._source = source
        self._immortal = immortal

    def handles(self, op: Operation) -> bool:
        return op in (Operation.CREATE, Operation.UPDATE, Operation.DELETE)

    async def admit(self, attrs: AdmissionAttributes) -> None:
        is_namespace = attrs.group == "" and attrs.resource == "namespaces"
        if attrs.operation is Operation.DELETE and is_namespace and attrs.name in self._immortal:
            raise forbidden(attrs, "this namespace may not be deleted")
        if is_namespace or not attrs.namespace:
            return  # namespaces themselves and cluster-scoped objects
        if attrs.operation is Operation.DELETE or (attrs.group, attrs.resource) in _ACCESS_REVIEWS:
            return
        ns = await self._source.get("namespaces", "", attrs.namespace)
        if ns is None:  # creates and updates both need the namespace
            raise not_found("namespaces", "", attrs.namespace)
        if attrs.operation is Operation.CREATE and (ns.get("status") or {}).get("phase") == "Terminating":
            raise forbidden(
                attrs,
                f"unable to create new content in namespace {attrs.namespace} because it is being terminated",
                causes=[
                    {
                        "reason": "NamespaceTerminating",
                        "message": f"namespace {attrs.namespace} is being terminated",
                        "field": "metadata.namespace",
                    }
                ],
            )
