"""NodeRestriction admission: a kubelet (`system:node:<name>`) may modify only its own Node, Lease, CSINode and the
pods bound to it, may create only mirror pods, and may not set restricted labels (fact sheet controlplane §7.3).
Validating plugin; reads Pods and Nodes through the ObjectSource.
"""

from __future__ import annotations

import copy
from typing import Any

from pykubeadm import constants
from pykubeadm.apiserver.admission.interfaces import (
    AdmissionAttributes,
    Operation,
    forbidden,
    not_found,
)
from pykubeadm.apiserver.authz.node import node_name_of, pod_references
from pykubeadm.apiserver.objects import ObjectSource

__all__ = ["NodeRestriction", "is_forbidden_node_label"]

_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
    }
)


def _in_domain(namespace: str, domain: str) -> bool:
    return namespace == domain or namespace.endswith("." + domain)


def is_forbidden_node_label(key: str) -> bool:
    """Labels a node may not set on itself: node-restriction.kubernetes.io/*, and kubernetes.io / k8s.io namespaces
    except the kubelet's own labels and the kubelet.kubernetes.io / node.kubernetes.io namespaces."""
    if "/" not in key:
        return False
    ns = key.split("/", 1)[0]
    if _in_domain(ns, "node-restriction.kubernetes.io"):
        return True
    if not (_in_domain(ns, "kubernetes.io") or _in_domain(ns, "k8s.io")):
        return False
    if key in _KUBELET_LABELS:
        return False
    return not (_in_domain(ns, "kubelet.kubernetes.io") or _in_domain(ns, "node.kubernetes.io"))


def _meta(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("metadata") or {}


def _spec(obj: dict[str, Any] | None) -> dict[str, Any]:
    return (obj or {}).get("spec") or {}


class NodeRestriction:
    name = "NodeRestriction"

    def __init__(self, source: ObjectSource):
        self._source = source

    def handles(self, op: Operation) -> bool:
        return op in (Operation.CREATE, Operation.UPDATE, Operation.DELETE)

    async def validate(self, attrs: AdmissionAttributes) -> None:
        node = node_name_of(attrs.user)
        if node is None:
            return
        if not node:
            raise forbidden(attrs, f'could not determine node from user "{attrs.user.name}"')
        key = (attrs.group, attrs.resource)
        if key == ("", "pods"):
            await self._pods(node, attrs)
        elif key == ("", "nodes"):
            self._node(node, attrs)
        elif key == ("", "persistentvolumeclaims"):
            if attrs.subresource != "status":
                raise forbidden(attrs, "may only update PVC status")
            self._pvc(node, attrs)
        elif key == ("", "serviceaccounts") and attrs.subresource == "token":
            await self._sa_token(node, attrs)
        elif key == ("coordination.k8s.io", "leases"):
            self._lease(node, attrs)
        elif key == ("storage.k8s.io", "csinodes"):
            self._csinode(node, attrs)

    # --- pods ---------------------------------------------------------------------------------------------------

    async def _pods(self, node: str, attrs: AdmissionAttributes) -> None:
        if not attrs.subresource:
            if attrs.operation is Operation.CREATE:
                await self._pod_create(node, attrs)
            elif attrs.operation is Operation.DELETE:
                pod = attrs.old_obj or await self._source.get("pods", attrs.namespace, attrs.name)
                if pod is None:
                    raise not_found("pods", "", attrs.name)
                if _spec(pod).get("nodeName") != node:
                    raise forbidden(attrs, f'node "{node}" can only delete pods with spec.nodeName set to itself')
            else:
                raise forbidden(
                    attrs,
                    f'unexpected operation "{attrs.operation.value}", node "{node}" can only create and delete mirror pods',
                )
        elif attrs.subresource == "status":
            if attrs.operation is not Operation.UPDATE:
                raise forbidden(attrs, f'unexpected operation "{attrs.operation.value}"')
            old = attrs.old_obj or await self._source.get("pods", attrs.namespace, attrs.name)
            if old is None or _spec(old).get("nodeName") != node:
                raise forbidden(
                    attrs,
                    f'node "{node}" can only update pod status for pods with spec.nodeName set to itself',  # noqa: S608
                )
            if (_meta(old).get("labels") or {}) != (_meta(attrs.obj).get("labels") or {}):
                raise forbidden(attrs, f'node "{node}" cannot update labels through pod status')
            old_claims = ((old.get("status") or {}).get("resourceClaimStatuses")) or []
            new_claims = (((attrs.obj or {}).get("status") or {}).get("resourceClaimStatuses")) or []
            if old_claims != new_claims:
                raise forbidden(attrs, f'node "{node}" cannot update resource claim statues')
        elif attrs.subresource == "eviction":
            if attrs.operation is not Operation.CREATE:
                raise forbidden(attrs, f"unexpected operation {attrs.operation.value}")
            name = attrs.name or _meta(attrs.obj).get("name", "")
            if not name:
                raise forbidden(attrs, "could not determine pod from request data")
            pod = await self._source.get("pods", attrs.namespace, name)
            if pod is None:
                raise not_found("pods", "", name)
            if _spec(pod).get("nodeName") != node:
                raise forbidden(attrs, f"node {node} can only evict pods with spec.nodeName set to itself")
        else:
            raise forbidden(
                attrs, f"unexpected pod subresource \"{attrs.subresource}\", only 'status' and 'eviction' are allowed"
            )

    async def _pod_create(self, node: str, attrs: AdmissionAttributes) -> None:
        pod = attrs.obj or {}
        meta = _meta(pod)
        if _MIRROR_ANNOTATION not in (meta.get("annotations") or {}):
            raise forbidden(
                attrs, f'pod does not have "{_MIRROR_ANNOTATION}" annotation, node "{node}" can only create mirror pods'
            )
        if _spec(pod).get("nodeName") != node:
            raise forbidden(attrs, f'node "{node}" can only create pods with spec.nodeName set to itself')
        owners = meta.get("ownerReferences") or []
        if len(owners) > 1:
            raise forbidden(attrs, f'node "{node}" can only create pods with a single owner reference set to itself')
        if not owners:
            raise forbidden(attrs, f'node "{node}" can only create pods with an owner reference set to itself')
        owner = owners[0]
        if owner.get("apiVersion") != "v1" or owner.get("kind") != "Node" or owner.get("name") != node:
            raise forbidden(attrs, f'node "{node}" can only create pods with an owner reference set to itself')
        if not owner.get("controller"):
            raise forbidden(
                attrs, f'node "{node}" can only create pods with a controller owner reference set to itself'
            )
        if owner.get("blockOwnerDeletion"):
            raise forbidden(attrs, f'node "{node}" must not set blockOwnerDeletion on an owner reference')
        current = await self._source.get("nodes", "", node)
        if current is None:
            raise not_found("nodes", "", node)
        if _meta(current).get("uid") != owner.get("uid"):
            raise forbidden(
                attrs, f"node {node} UID mismatch: expected {owner.get('uid', '')} got {_meta(current).get('uid', '')}"
            )
        spec = _spec(pod)
        refs = pod_references(pod)
        if spec.get("serviceAccountName") or spec.get("serviceAccount"):
            raise forbidden(attrs, f'node "{node}" can not create pods that reference a service account')
        if refs["secrets"]:
            raise forbidden(attrs, f'node "{node}" can not create pods that reference secrets')
        if refs["configmaps"]:
            raise forbidden(attrs, f'node "{node}" can not create pods that reference configmaps')
        for v in spec.get("volumes") or ():
            for src in (v.get("projected") or {}).get("sources") or ():
                if src.get("clusterTrustBundle"):
                    raise forbidden(attrs, f'node "{node}" can not create pods that reference clustertrustbundles')
        if any(v.get("persistentVolumeClaim") for v in spec.get("volumes") or ()):
            raise forbidden(attrs, f'node "{node}" can not create pods that reference persistentvolumeclaims')

    # --- nodes --------------------------------------------------------------------------------------------------

    def _node(self, node: str, attrs: AdmissionAttributes) -> None:
        requested = _meta(attrs.obj).get("name", "") if attrs.operation is Operation.CREATE else attrs.name
        if requested != node:
            raise forbidden(attrs, f'node "{node}" is not allowed to modify node "{requested}"')
        if attrs.operation is Operation.CREATE:
            if _spec(attrs.obj).get("configSource") is not None:
                raise forbidden(attrs, f'node "{node}" is not allowed to create pods with a non-nil configSource')
            bad = sorted(k for k in (_meta(attrs.obj).get("labels") or {}) if is_forbidden_node_label(k))
            if bad:
                raise forbidden(attrs, f'node "{node}" is not allowed to set the following labels: {", ".join(bad)}')
        elif attrs.operation is Operation.UPDATE:
            new_spec, old_spec = _spec(attrs.obj), _spec(attrs.old_obj)
            if new_spec.get("configSource") is not None and new_spec.get("configSource") != old_spec.get(
                "configSource"
            ):
                raise forbidden(
                    attrs, f'node "{node}" is not allowed to update configSource to a new non-nil configSource'
                )
            if (new_spec.get("taints") or []) != (old_spec.get("taints") or []):
                raise forbidden(attrs, f'node "{node}" is not allowed to modify taints')
            new_labels = _meta(attrs.obj).get("labels") or {}
            old_labels = _meta(attrs.old_obj).get("labels") or {}
            changed = {k for k in new_labels.keys() | old_labels.keys() if new_labels.get(k) != old_labels.get(k)}
            bad = sorted(k for k in changed if is_forbidden_node_label(k))
            if bad:
                raise forbidden(attrs, f"is not allowed to modify labels: {', '.join(bad)}")

    # --- others -------------------------------------------------------------------------------------------------

    def _pvc(self, node: str, attrs: AdmissionAttributes) -> None:
        if attrs.operation is not Operation.UPDATE:
            raise forbidden(attrs, f'unexpected operation "{attrs.operation.value}"')
        old, new = copy.deepcopy(attrs.old_obj or {}), copy.deepcopy(attrs.obj or {})
        for obj in (old, new):
            status = obj.setdefault("status", {})
            for field in ("capacity", "conditions", "allocatedResources", "allocatedResourceStatuses"):
                status.pop(field, None)
            (obj.get("metadata") or {}).pop("resourceVersion", None)
            (obj.get("metadata") or {}).pop("managedFields", None)
        if old != new:
            raise forbidden(
                attrs, f'node "{node}" is not allowed to update fields other than status.capacity and status.conditions'
            )

    async def _sa_token(self, node: str, attrs: AdmissionAttributes) -> None:
        if attrs.operation is not Operation.CREATE:
            return
        ref = _spec(attrs.obj).get("boundObjectRef") or {}
        if ref.get("apiVersion") != "v1" or ref.get("kind") != "Pod" or not ref.get("name"):
            raise forbidden(attrs, "node requested token not bound to a pod")
        if not ref.get("uid"):
            raise forbidden(attrs, "node requested token with a pod binding without a uid")
        pod = await self._source.get("pods", attrs.namespace, ref["name"])
        if pod is None:
            raise not_found("pods", "", ref["name"])
        if _meta(pod).get("uid") != ref["uid"]:
            raise forbidden(
                attrs,
                f"the UID in the bound object reference ({ref['uid']}) does not match the UID in record. "
                "The object might have been deleted and then recreated",
            )
        if _spec(pod).get("nodeName") != node:
            raise forbidden(attrs, "node requested token bound to a pod scheduled on a different node")

    def _lease(self, node: str, attrs: AdmissionAttributes) -> None:
        if attrs.namespace != constants.NAMESPACE_NODE_LEASE:
            raise forbidden(attrs, f'can only access leases in the "{constants.NAMESPACE_NODE_LEASE}" system namespace')
        name = _meta(attrs.obj).get("name", "") if attrs.operation is Operation.CREATE else attrs.name
        if name != node:
            raise forbidden(attrs, "can only access node lease with the same name as the requesting node")

    def _csinode(self, node: str, attrs: AdmissionAttributes) -> None:
        name = _meta(attrs.obj).get("name", "") if attrs.operation is Operation.CREATE else attrs.name
        if name != node:
            raise forbidden(attrs, "can only access CSINode with the same name as the requesting node")
