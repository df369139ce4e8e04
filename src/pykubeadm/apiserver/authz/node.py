"""Node authorizer (--authorization-mode=Node,…): what a kubelet `system:node:<name>` in `system:nodes` may touch.

Returns ALLOW or NO_OPINION (never DENY), as kube-apiserver's does (fact sheet controlplane §7.2, with
AuthorizeNodeWithSelectors on, as in 1.33). Instead of a watch-fed graph it asks the ObjectSource on demand: the
pods bound to the node (`spec.nodeName`) and what they reference. Everything not special-cased falls back to
NODE_RULES with RBAC matching.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pykubeadm import constants
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.attributes import Attributes, Decision
from pykubeadm.apiserver.authz.bootstrap_policy import NODE_RULES
from pykubeadm.apiserver.authz.rbac import rules_allow
from pykubeadm.apiserver.objects import ObjectSource

__all__ = ["NodeAuthorizer", "node_name_of", "parse_field_selector", "pod_references"]

_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_READ = ("get", "list", "watch")


def node_name_of(user: UserInfo) -> str | None:
    """The node name of a node identity (`system:node:<name>` in `system:nodes`), "" if the name is empty, else None."""
    if not user.name.startswith(constants.NODES_USER_PREFIX) or constants.NODES_GROUP not in user.groups:
        return None
    return user.name[len(constants.NODES_USER_PREFIX) :]


def parse_field_selector(selector: str) -> dict[str, str]:
    """Equality requirements (`a=b`, `a==b`) of a field selector; `!=` terms are ignored."""
    out: dict[str, str] = {}
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            continue
        key, sep, value = term.replace("==", "=").partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _volumes(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from spec.get("volumes") or ()


def _containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or ()


def pod_references(pod: dict[str, Any]) -> dict[str, set[str]]:
    """Names of secrets, configmaps, persistentvolumeclaims, serviceaccounts and resourceclaims a pod references."""
    spec = pod.get("spec") or {}
    refs: dict[str, set[str]] = {k: set() for k in ("secrets", "configmaps", "pvcs", "serviceaccounts", "claims")}
    for s in spec.get("imagePullSecrets") or ():
        refs["secrets"].add(s.get("name", ""))
    for c in _containers(spec):
        for env in c.get("env") or ():
            vf = env.get("valueFrom") or {}
            if vf.get("secretKeyRef"):
                refs["secrets"].add(vf["secretKeyRef"].get("name", ""))
            if vf.get("configMapKeyRef"):
                refs["configmaps"].add(vf["configMapKeyRef"].get("name", ""))
        for ef in c.get("envFrom") or ():
            if ef.get("secretRef"):
                refs["secrets"].add(ef["secretRef"].get("name", ""))
            if ef.get("configMapRef"):
                refs["configmaps"].add(ef["configMapRef"].get("name", ""))
    for v in _volumes(spec):
        if v.get("secret"):
            refs["secrets"].add(v["secret"].get("secretName", ""))
        if v.get("configMap"):
            refs["configmaps"].add(v["configMap"].get("name", ""))
        if v.get("persistentVolumeClaim"):
            refs["pvcs"].add(v["persistentVolumeClaim"].get("claimName", ""))
        if v.get("ephemeral"):
            refs["pvcs"].add(f"{(pod.get('metadata') or {}).get('name', '')}-{v.get('name', '')}")
        for src in (v.get("projected") or {}).get("sources") or ():
            if src.get("secret"):
                refs["secrets"].add(src["secret"].get("name", ""))
            if src.get("configMap"):
                refs["configmaps"].add(src["configMap"].get("name", ""))
        for plugin in v.values():  # secretRef of volume plugins (csi, cephfs, rbd, iscsi, flexVolume, ...)
            if isinstance(plugin, dict):
                for key in ("secretRef", "nodePublishSecretRef"):
                    if isinstance(plugin.get(key), dict) and plugin[key].get("name"):
                        refs["secrets"].add(plugin[key]["name"])
                if isinstance(plugin.get("secretName"), str) and not v.get("secret"):
                    refs["secrets"].add(plugin["secretName"])  # azureFile
    refs["serviceaccounts"].add(spec.get("serviceAccountName") or spec.get("serviceAccount") or "")
    for claim in spec.get("resourceClaims") or ():
        if claim.get("resourceClaimName"):
            refs["claims"].add(claim["resourceClaimName"])
    for st in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
        if st.get("resourceClaimName"):
            refs["claims"].add(st["resourceClaimName"])
    for names in refs.values():
        names.discard("")
    return refs


def _no_relationship(node: str) -> str:
    return f"no relationship found between node '{node}' and this object"


class NodeAuthorizer:
    """An Authorizer for node identities; NO_OPINION for everybody else."""

    def __init__(self, source: ObjectSource):
        self._source = source

    async def _node_pods(self, node: str, namespace: str | None) -> list[dict[str, Any]]:
        return [p for p in await self._source.list("pods", namespace) if (p.get("spec") or {}).get("nodeName") == node]

    async def _referenced(self, node: str, namespace: str, kind: str, name: str) -> bool:
        for pod in await self._node_pods(node, namespace):
            if _MIRROR_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {}):
                continue  # mirror pods only have the pod -> node edge
            if name in pod_references(pod)[kind]:
                return True
        return False

    async def __call__(self, attrs: Attributes) -> tuple[Decision, str]:
        node = node_name_of(attrs.user)
        if node is None:
            return Decision.NO_OPINION, ""
        if not node:
            return Decision.NO_OPINION, f'unknown node for user "{attrs.user.name}"'
        if attrs.resource_request:
            handler = _HANDLERS.get((attrs.api_group, attrs.resource))
            if handler is not None:
                return await handler(self, node, attrs)
        if rules_allow(NODE_RULES, attrs):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""

    async def _read_namespaced(self, node: str, attrs: Attributes, kind: str) -> tuple[Decision, str]:
        if attrs.verb not in _READ:
            return Decision.NO_OPINION, "can only read resources of this type"
        if attrs.subresource:
            return Decision.NO_OPINION, "cannot read subresource"
        if not attrs.namespace:
            return Decision.NO_OPINION, "can only read namespaced object of this type"
        if not attrs.name:
            return Decision.NO_OPINION, "No Object name found"
        if await self._referenced(node, attrs.namespace, kind, attrs.name):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, _no_relationship(node)

    async def _secrets(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        return await self._read_namespaced(node, attrs, "secrets")

    async def _configmaps(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        return await self._read_namespaced(node, attrs, "configmaps")

    async def _pvcs(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if attrs.subresource == "status":
            if attrs.verb not in ("update", "patch"):
                return Decision.NO_OPINION, "can only get/update/patch this type"
        elif attrs.subresource:
            return Decision.NO_OPINION, "cannot get subresource"
        elif attrs.verb != "get":
            return Decision.NO_OPINION, "can only get individual resources of this type"
        if not attrs.name:
            return Decision.NO_OPINION, "No Object name found"
        if await self._referenced(node, attrs.namespace, "pvcs", attrs.name):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, _no_relationship(node)

    async def _pvs(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if attrs.verb != "get":
            return Decision.NO_OPINION, "can only get individual resources of this type"
        if attrs.subresource:
            return Decision.NO_OPINION, "cannot get subresource"
        for pod in await self._node_pods(node, None):
            ns = (pod.get("metadata") or {}).get("namespace", "")
            for claim in pod_references(pod)["pvcs"]:
                pvc = await self._source.get("persistentvolumeclaims", ns, claim)
                if pvc and (pvc.get("spec") or {}).get("volumeName") == attrs.name:
                    return Decision.ALLOW, ""
        return Decision.NO_OPINION, _no_relationship(node)

    async def _service_accounts(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if attrs.verb != "create" or not attrs.name:
            return Decision.NO_OPINION, "can only create tokens for individual service accounts"
        if attrs.subresource != "token":
            return Decision.NO_OPINION, "can only create token subresource of serviceaccount"
        if await self._referenced(node, attrs.namespace, "serviceaccounts", attrs.name):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, _no_relationship(node)

    async def _leases(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return Decision.NO_OPINION, "can only get, create, update, patch, or delete a node lease"
        if attrs.namespace != constants.NAMESPACE_NODE_LEASE:
            return (
                Decision.NO_OPINION,
                f'can only access leases in the "{constants.NAMESPACE_NODE_LEASE}" system namespace',
            )
        if attrs.subresource:
            return Decision.NO_OPINION, "cannot access subresource of a node lease"
        if attrs.verb != "create" and attrs.name != node:
            return Decision.NO_OPINION, "can only access node lease with the same name as the requesting node"
        return Decision.ALLOW, ""

    async def _csinodes(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return Decision.NO_OPINION, "can only get, create, update, patch, or delete a CSINode"
        if attrs.subresource:
            return Decision.NO_OPINION, "cannot authorize CSINode subresources"
        if attrs.verb != "create" and attrs.name != node:
            return Decision.NO_OPINION, "can only access CSINode with the same name as the requesting node"
        return Decision.ALLOW, ""

    async def _volume_attachments(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if attrs.verb != "get" or attrs.subresource:
            return Decision.NO_OPINION, "can only get individual resources of this type"
        va = await self._source.get("volumeattachments.storage.k8s.io", "", attrs.name)
        if va and (va.get("spec") or {}).get("nodeName") == node:
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, _no_relationship(node)

    async def _resource_claims(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if attrs.verb != "get" or attrs.subresource:
            return Decision.NO_OPINION, "can only get individual resources of this type"
        if await self._referenced(node, attrs.namespace, "claims", attrs.name):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, _no_relationship(node)

    async def _nodes(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if not attrs.subresource:
            if attrs.verb in ("create", "update", "patch"):  # NodeRestriction limits these to the node itself
                return Decision.ALLOW, ""
            if attrs.verb in _READ:
                if attrs.name == node:
                    return Decision.ALLOW, ""
                if attrs.name:
                    return Decision.NO_OPINION, f"node '{node}' cannot read '{attrs.name}', only its own Node object"
                return Decision.NO_OPINION, f"node '{node}' cannot read all nodes, only its own Node object"
        elif attrs.subresource == "status" and attrs.verb in ("update", "patch"):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""

    async def _pods(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if not attrs.subresource:
            if attrs.verb == "get":
                return await self._pod_related(node, attrs)
            if attrs.verb in ("list", "watch"):
                if parse_field_selector(attrs.field_selector).get("spec.nodeName") == node:
                    return Decision.ALLOW, ""
                if attrs.name:
                    return await self._pod_related(node, attrs)
                return Decision.NO_OPINION, "can only list/watch pods with spec.nodeName field selector"
            if attrs.verb in ("create", "delete"):  # mirror pods; NodeRestriction limits them to the node itself
                return Decision.ALLOW, ""
        elif (attrs.subresource == "status" and attrs.verb in ("update", "patch")) or (
            attrs.subresource == "eviction" and attrs.verb == "create"
        ):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""

    async def _pod_related(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if attrs.verb == "get" and attrs.subresource:
            return Decision.NO_OPINION, "cannot get subresource"
        if not attrs.name:
            return Decision.NO_OPINION, "No Object name found"
        pod = await self._source.get("pods", attrs.namespace, attrs.name)
        if pod and (pod.get("spec") or {}).get("nodeName") == node:
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, _no_relationship(node)

    async def _resource_slices(self, node: str, attrs: Attributes) -> tuple[Decision, str]:
        if attrs.subresource:
            return Decision.NO_OPINION, "cannot authorize ResourceSlice subresources"
        if attrs.verb == "create":
            return Decision.ALLOW, ""
        if attrs.verb in ("get", "update", "patch", "delete"):
            if not attrs.name:
                return Decision.NO_OPINION, "No Object name found"
            rs = await self._source.get("resourceslices.resource.k8s.io", "", attrs.name)
            if rs and (rs.get("spec") or {}).get("nodeName") == node:
                return Decision.ALLOW, ""
            return Decision.NO_OPINION, _no_relationship(node)
        if attrs.verb in ("watch", "list", "deletecollection"):
            if parse_field_selector(attrs.field_selector).get("nodeName") == node:
                return Decision.ALLOW, ""
            return (
                Decision.NO_OPINION,
                "can only list/watch/deletecollection resourceslices with nodeName field selector",
            )
        return Decision.NO_OPINION, (
            "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, "
            "delete, deletecollection"
        )


_HANDLERS = {
    ("", "secrets"): NodeAuthorizer._secrets,
    ("", "configmaps"): NodeAuthorizer._configmaps,
    ("", "persistentvolumeclaims"): NodeAuthorizer._pvcs,
    ("", "persistentvolumes"): NodeAuthorizer._pvs,
    ("", "serviceaccounts"): NodeAuthorizer._service_accounts,
    ("", "nodes"): NodeAuthorizer._nodes,
    ("", "pods"): NodeAuthorizer._pods,
    ("coordination.k8s.io", "leases"): NodeAuthorizer._leases,
    ("storage.k8s.io", "csinodes"): NodeAuthorizer._csinodes,
    ("storage.k8s.io", "volumeattachments"): NodeAuthorizer._volume_attachments,
    ("resource.k8s.io", "resourceclaims"): NodeAuthorizer._resource_claims,
    ("resource.k8s.io", "resourceslices"): NodeAuthorizer._resource_slices,
}
