"""DESIGN.md "Security invariants", checked exhaustively over resources × verbs × namespaces × names with the default
policy plus kubeadm's RBAC: anonymous and bootstrap-token users get exactly their documented grants, nothing else."""

from __future__ import annotations

import itertools

import pytest

from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.attributes import Attributes, Decision
from pykubeadm.apiserver.authz.node import NodeAuthorizer
from pykubeadm.apiserver.authz.rbac import RBACAuthorizer
from pykubeadm.apiserver.authz.union import privileged_groups, union

RESOURCES = [
    ("", "namespaces"), ("", "secrets"), ("", "configmaps"), ("", "serviceaccounts"), ("", "nodes"), ("", "pods"),
    ("", "services"), ("", "endpoints"), ("", "events"), ("coordination.k8s.io", "leases"),
    ("certificates.k8s.io", "certificatesigningrequests"), ("rbac.authorization.k8s.io", "roles"),
    ("rbac.authorization.k8s.io", "rolebindings"), ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"), ("apps", "daemonsets"), ("apps", "deployments"),
    ("scheduling.k8s.io", "priorityclasses"),
]  # fmt: skip
VERBS = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
NAMESPACES = ["", "default", "kube-system", "kube-public", "kube-node-lease"]
NAMES = ["", "x", "cluster-info", "kubeadm-config", "kubelet-config", "kubeadm-certs", "node-a"]
PATHS = ["/", "/api", "/apis", "/healthz", "/livez", "/readyz", "/version", "/metrics", "/openapi/v2", "/logs"]

ANON = UserInfo("system:anonymous", groups=("system:unauthenticated",))
BOOT = UserInfo(
    "system:bootstrap:abcdef",
    groups=("system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", "system:authenticated"),
)


def _allowed_for(user: UserInfo, group: str, resource: str, verb: str, ns: str, name: str) -> bool:
    if user is ANON:
        return (resource, verb, ns, name) == ("configmaps", "get", "kube-public", "cluster-info")
    if resource == "certificatesigningrequests":
        return verb in ("create", "get", "list", "watch")
    if resource == "nodes":
        return verb == "get"
    if (resource, verb, ns) == ("configmaps", "get", "kube-system"):
        return name in ("kubeadm-config", "kubelet-config")
    return (resource, verb, ns, name) == ("secrets", "get", "kube-system", "kubeadm-certs")


@pytest.mark.parametrize("who", ["anonymous", "bootstrap"])
async def test_exact_grants(source, who):
    user = ANON if who == "anonymous" else BOOT
    authz = union(privileged_groups(), NodeAuthorizer(source), RBACAuthorizer(source))
    wrong = []
    for (group, resource), verb, ns, name in itertools.product(RESOURCES, VERBS, NAMESPACES, NAMES):
        if resource in ("namespaces", "nodes", "certificatesigningrequests", "clusterroles", "clusterrolebindings",
                        "priorityclasses") and ns:  # fmt: skip
            continue
        if (verb in ("list", "watch", "create", "deletecollection")) == bool(name):
            continue  # collection verbs carry no name, object verbs always do
        attrs = Attributes(user, verb, True, namespace=ns, api_group=group, resource=resource, name=name)
        allowed = (await authz(attrs))[0] is Decision.ALLOW
        if allowed != _allowed_for(user, group, resource, verb, ns, name):
            wrong.append((group, resource, verb, ns, name, allowed))
    for path in PATHS:
        allowed = (await authz(Attributes(user, "get", False, path=path)))[0] is Decision.ALLOW
        expected = path in ("/healthz", "/livez", "/readyz", "/version") or (
            user is BOOT and path in ("/api", "/apis", "/openapi/v2")
        )
        if allowed != expected:
            wrong.append(("path", path, allowed))
    assert not wrong, wrong
