"""The authorization matrix: real credentials → build_auth's authenticator → Node,RBAC authorizer → exact 403 text.

Identities: anonymous, a kubeadm bootstrap token, node A, node B, admin (kubeadm:cluster-admins → cluster-admin),
super-admin (system:masters), and a service account with `view` in default. Each cell is either ALLOW or the exact
message kube-apiserver returns.
"""

from __future__ import annotations

from typing import Any

import pytest

from pykubeadm.apiserver.authn.config import build_auth
from pykubeadm.apiserver.authn.user import AuthRequest, UserInfo
from pykubeadm.apiserver.authz.attributes import Attributes, Decision
from pykubeadm.apiserver.authz.messages import forbidden_message
from tests.unit.apiserver_auth.helpers import BOOTSTRAP_TOKEN, bound_claims, kubeadm_flags, mint_jwt

ALLOW = True
IDS = ("anonymous", "bootstrap", "node-a", "node-b", "admin", "super-admin", "sa")
USERS = {
    "anonymous": "system:anonymous",
    "bootstrap": "system:bootstrap:abcdef",
    "node-a": "system:node:node-a",
    "node-b": "system:node:node-b",
    "admin": "kubernetes-admin",
    "super-admin": "kubernetes-super-admin",
    "sa": "system:serviceaccount:default:a-sa",
}


def res(verb: str, resource: str, ns: str = "", name: str = "", group: str = "", sub: str = "", fs: str = "") -> dict:
    return dict(verb=verb, resource_request=True, namespace=ns, api_group=group, resource=resource, subresource=sub,
                name=name, api_version="v1", field_selector=fs)  # fmt: skip


def path(verb: str, p: str) -> dict:
    return dict(verb=verb, resource_request=False, path=p)


def everyone_but(allowed: set[str], msg: str, **overrides: Any) -> dict[str, Any]:
    """Expected cells: ALLOW for `allowed`, else `msg` formatted with the user (overrides win)."""
    cells = {i: ALLOW if i in allowed else msg for i in IDS}
    cells.update(overrides)
    return cells


ADMINS = {"admin", "super-admin"}
AUTHENTICATED = set(IDS) - {"anonymous"}
NO_REL = "{base}: no relationship found between node '{node}' and this object"

MATRIX: list[tuple[str, dict, dict[str, Any]]] = [
    ("healthz", path("get", "/healthz"), everyone_but(set(IDS), "")),
    ("version", path("get", "/version"), everyone_but(set(IDS), "")),
    (
        "discovery /api",
        path("get", "/api"),
        everyone_but(AUTHENTICATED, 'forbidden: User "{user}" cannot get path "/api"'),
    ),
    (
        "openapi",
        path("get", "/openapi/v2"),
        everyone_but(AUTHENTICATED, 'forbidden: User "{user}" cannot get path "/openapi/v2"'),
    ),
    ("metrics", path("get", "/metrics"), everyone_but(ADMINS, 'forbidden: User "{user}" cannot get path "/metrics"')),
    (
        "cluster-info",
        res("get", "configmaps", "kube-public", "cluster-info"),
        everyone_but(
            {"anonymous"} | ADMINS,
            'configmaps "cluster-info" is forbidden: User "{user}" cannot get resource "configmaps" in API group '
            '"" in the namespace "kube-public"',
            **{n: NO_REL for n in ("node-a", "node-b")},
        ),
    ),
    (
        "kubeadm-config",
        res("get", "configmaps", "kube-system", "kubeadm-config"),
        everyone_but(
            {"bootstrap", "node-a", "node-b"} | ADMINS,
            'configmaps "kubeadm-config" is forbidden: User "{user}" cannot get resource "configmaps" in API '
            'group "" in the namespace "kube-system"',
        ),
    ),
    (
        "kubelet-config",
        res("get", "configmaps", "kube-system", "kubelet-config"),
        everyone_but(
            {"bootstrap", "node-a", "node-b"} | ADMINS,
            'configmaps "kubelet-config" is forbidden: User "{user}" cannot get resource "configmaps" in API '
            'group "" in the namespace "kube-system"',
        ),
    ),
    (
        "kubeadm-certs",
        res("get", "secrets", "kube-system", "kubeadm-certs"),
        everyone_but(
            {"bootstrap"} | ADMINS,
            'secrets "kubeadm-certs" is forbidden: User "{user}" cannot get resource "secrets" in API group "" '
            'in the namespace "kube-system"',
            **{n: NO_REL for n in ("node-a", "node-b")},
        ),
    ),
    (
        "list secrets",
        res("list", "secrets", "kube-system"),
        everyone_but(
            ADMINS,
            'secrets is forbidden: User "{user}" cannot list resource "secrets" in API group "" in the '
            'namespace "kube-system"',
            **{n: "{base}: No Object name found" for n in ("node-a", "node-b")},
        ),
    ),
    (
        "secret of pod-a",
        res("get", "secrets", "default", "a-secret"),
        everyone_but(
            {"node-a"} | ADMINS,
            'secrets "a-secret" is forbidden: User "{user}" cannot get resource "secrets" in API group "" in '
            'the namespace "default"',
            **{"node-b": NO_REL},
        ),
    ),
    (
        "configmap of pod-a",
        res("get", "configmaps", "default", "a-config"),
        everyone_but(
            {"node-a", "sa"} | ADMINS,
            'configmaps "a-config" is forbidden: User "{user}" cannot get resource "configmaps" in API group '
            '"" in the namespace "default"',
            **{"node-b": NO_REL},
        ),
    ),
    (
        "watch secret of pod-b by name",
        res("watch", "secrets", "default", "b-secret"),
        everyone_but(
            {"node-b"} | ADMINS,
            'secrets "b-secret" is forbidden: User "{user}" cannot watch resource "secrets" in API group "" in '
            'the namespace "default"',
            **{"node-a": NO_REL},
        ),
    ),
    (
        "update secret of pod-a",
        res("update", "secrets", "default", "a-secret"),
        everyone_but(
            ADMINS,
            'secrets "a-secret" is forbidden: User "{user}" cannot update resource "secrets" in API group "" in '
            'the namespace "default"',
            **{n: "{base}: can only read resources of this type" for n in ("node-a", "node-b")},
        ),
    ),
    (
        "create CSR",
        res("create", "certificatesigningrequests", group="certificates.k8s.io"),
        everyone_but(
            {"bootstrap", "node-a", "node-b"} | ADMINS,
            'certificatesigningrequests.certificates.k8s.io is forbidden: User "{user}" cannot create resource '
            '"certificatesigningrequests" in API group "certificates.k8s.io" at the cluster scope',
        ),
    ),
    (
        "watch CSRs",
        res("watch", "certificatesigningrequests", group="certificates.k8s.io"),
        everyone_but(
            {"bootstrap", "node-a", "node-b"} | ADMINS,
            'certificatesigningrequests.certificates.k8s.io is forbidden: User "{user}" cannot watch resource '
            '"certificatesigningrequests" in API group "certificates.k8s.io" at the cluster scope',
        ),
    ),
    (
        "nodeclient",
        res("create", "certificatesigningrequests", group="certificates.k8s.io", sub="nodeclient"),
        everyone_but(
            {"bootstrap"} | ADMINS,
            'certificatesigningrequests.certificates.k8s.io is forbidden: User "{user}" cannot create resource '
            '"certificatesigningrequests/nodeclient" in API group "certificates.k8s.io" at the cluster scope',
        ),
    ),
    (
        "selfnodeclient",
        res("create", "certificatesigningrequests", group="certificates.k8s.io", sub="selfnodeclient"),
        everyone_but(
            {"node-a", "node-b"} | ADMINS,
            'certificatesigningrequests.certificates.k8s.io is forbidden: User "{user}" cannot create resource '
            '"certificatesigningrequests/selfnodeclient" in API group "certificates.k8s.io" at the cluster '
            "scope",
        ),
    ),
    (
        "approve kubelet client signer",
        res("approve", "signers", name="kubernetes.io/kube-apiserver-client-kubelet", group="certificates.k8s.io"),
        everyone_but(
            ADMINS,
            'signers.certificates.k8s.io "kubernetes.io/kube-apiserver-client-kubelet" is forbidden: User '
            '"{user}" cannot approve resource "signers" in API group "certificates.k8s.io" at the cluster '
            "scope",
        ),
    ),
    (
        "get node-a",
        res("get", "nodes", name="node-a"),
        everyone_but(
            {"bootstrap", "node-a"} | ADMINS,
            'nodes "node-a" is forbidden: User "{user}" cannot get resource "nodes" in API group "" at the '
            "cluster scope",
            **{"node-b": "{base}: node 'node-b' cannot read 'node-a', only its own Node object"},
        ),
    ),
    (
        "list nodes",
        res("list", "nodes"),
        everyone_but(
            ADMINS,
            'nodes is forbidden: User "{user}" cannot list resource "nodes" in API group "" at the cluster scope',
            **{
                n: f"{{base}}: node '{n}' cannot read all nodes, only its own Node object" for n in ("node-a", "node-b")
            },
        ),
    ),
    (
        "update node-a status",
        res("patch", "nodes", name="node-a", sub="status"),
        everyone_but(
            {"node-a", "node-b"} | ADMINS,  # NodeRestriction, not the authorizer, limits nodes to themselves
            'nodes "node-a" is forbidden: User "{user}" cannot patch resource "nodes/status" in API group "" at '
            "the cluster scope",
        ),
    ),
    (
        "delete node-a",
        res("delete", "nodes", name="node-a"),
        everyone_but(
            ADMINS,
            'nodes "node-a" is forbidden: User "{user}" cannot delete resource "nodes" in API group "" at the '
            "cluster scope",
        ),
    ),
    (
        "node-a lease",
        res("update", "leases", "kube-node-lease", "node-a", group="coordination.k8s.io"),
        everyone_but(
            {"node-a"} | ADMINS,
            'leases.coordination.k8s.io "node-a" is forbidden: User "{user}" cannot update resource "leases" in '
            'API group "coordination.k8s.io" in the namespace "kube-node-lease"',
            **{"node-b": "{base}: can only access node lease with the same name as the requesting node"},
        ),
    ),
    (
        "kcm leader lease",
        res("update", "leases", "kube-system", "kube-controller-manager", group="coordination.k8s.io"),
        everyone_but(
            ADMINS,
            'leases.coordination.k8s.io "kube-controller-manager" is forbidden: User "{user}" cannot update '
            'resource "leases" in API group "coordination.k8s.io" in the namespace "kube-system"',
            **{
                n: '{base}: can only access leases in the "kube-node-lease" system namespace'
                for n in ("node-a", "node-b")
            },
        ),
    ),
    (
        "list own pods",
        res("list", "pods", fs="spec.nodeName=node-a"),
        everyone_but(
            {"node-a"} | ADMINS,
            'pods is forbidden: User "{user}" cannot list resource "pods" in API group "" at the cluster scope',
            **{"node-b": "{base}: can only list/watch pods with spec.nodeName field selector"},
        ),
    ),
    (
        "list pods in default",
        res("list", "pods", "default"),
        everyone_but(
            {"sa"} | ADMINS,
            'pods is forbidden: User "{user}" cannot list resource "pods" in API group "" in the namespace "default"',
            **{n: "{base}: can only list/watch pods with spec.nodeName field selector" for n in ("node-a", "node-b")},
        ),
    ),
    (
        "list pods in kube-system",
        res("list", "pods", "kube-system"),
        everyone_but(
            ADMINS,
            'pods is forbidden: User "{user}" cannot list resource "pods" in API group "" in the namespace '
            '"kube-system"',
            **{n: "{base}: can only list/watch pods with spec.nodeName field selector" for n in ("node-a", "node-b")},
        ),
    ),
    (
        "token for a-sa",
        res("create", "serviceaccounts", "default", "a-sa", sub="token"),
        everyone_but(
            {"node-a"} | ADMINS,
            'serviceaccounts "a-sa" is forbidden: User "{user}" cannot create resource "serviceaccounts/token" '
            'in API group "" in the namespace "default"',
            **{"node-b": NO_REL},
        ),
    ),
    (
        "pvc of pod-a",
        res("get", "persistentvolumeclaims", "default", "a-pvc"),
        everyone_but(
            {"node-a", "sa"} | ADMINS,
            'persistentvolumeclaims "a-pvc" is forbidden: User "{user}" cannot get resource '
            '"persistentvolumeclaims" in API group "" in the namespace "default"',
            **{"node-b": NO_REL},
        ),
    ),
    (
        "pv of pod-a",
        res("get", "persistentvolumes", name="pv-a"),
        everyone_but(
            {"node-a"} | ADMINS,
            'persistentvolumes "pv-a" is forbidden: User "{user}" cannot get resource "persistentvolumes" in '
            'API group "" at the cluster scope',
            **{"node-b": NO_REL},
        ),
    ),
    (
        "pod logs",
        res("get", "pods", "default", "pod-a", sub="log"),
        everyone_but(
            {"sa"} | ADMINS,
            'pods "pod-a" is forbidden: User "{user}" cannot get resource "pods/log" in API group "" in the '
            'namespace "default"',
        ),
    ),
    (
        "can-i",
        res("create", "selfsubjectaccessreviews", group="authorization.k8s.io"),
        everyone_but(
            AUTHENTICATED,
            'selfsubjectaccessreviews.authorization.k8s.io is forbidden: User "{user}" cannot create resource '
            '"selfsubjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope',
        ),
    ),
    (
        "whoami",
        res("create", "selfsubjectreviews", group="authentication.k8s.io"),
        everyone_but(
            AUTHENTICATED,
            'selfsubjectreviews.authentication.k8s.io is forbidden: User "{user}" cannot create resource '
            '"selfsubjectreviews" in API group "authentication.k8s.io" at the cluster scope',
        ),
    ),
    (
        "delete kube-system",
        res("delete", "namespaces", name="kube-system"),
        everyone_but(
            ADMINS,
            'namespaces "kube-system" is forbidden: User "{user}" cannot delete resource "namespaces" in API '
            'group "" at the cluster scope',
        ),
    ),
    (
        "create clusterrolebinding",
        res("create", "clusterrolebindings", group="rbac.authorization.k8s.io"),
        everyone_but(
            ADMINS,
            'clusterrolebindings.rbac.authorization.k8s.io is forbidden: User "{user}" cannot create resource '
            '"clusterrolebindings" in API group "rbac.authorization.k8s.io" at the cluster scope',
        ),
    ),
    (
        "scale deployment",
        res("update", "deployments", "default", "web", group="apps", sub="scale"),
        everyone_but(
            ADMINS,
            'deployments.apps "web" is forbidden: User "{user}" cannot update resource "deployments/scale" in '
            'API group "apps" in the namespace "default"',
        ),
    ),
]


@pytest.fixture
async def identities(pki_dir, source, client_ca, sa_key) -> dict[str, UserInfo]:
    cfg = build_auth(kubeadm_flags(pki_dir), source)
    sa_token = mint_jwt(sa_key, bound_claims("default", "a-sa", "uid-sa-a-sa"))
    requests = {
        "anonymous": AuthRequest(headers={}),
        "bootstrap": AuthRequest(headers={"Authorization": f"Bearer {BOOTSTRAP_TOKEN}"}),
        "node-a": AuthRequest({}, (client_ca.issue("system:node:node-a", ("system:nodes",)),)),
        "node-b": AuthRequest({}, (client_ca.issue("system:node:node-b", ("system:nodes",)),)),
        "admin": AuthRequest({}, (client_ca.issue("kubernetes-admin", ("kubeadm:cluster-admins",)),)),
        "super-admin": AuthRequest({}, (client_ca.issue("kubernetes-super-admin", ("system:masters",)),)),
        "sa": AuthRequest(headers={"Authorization": f"Bearer {sa_token}"}),
    }
    out = {}
    for ident, req in requests.items():
        user = await cfg.authenticator(req)
        assert user is not None and user.name == USERS[ident]
        out[ident] = user
    out["_authorizer"] = cfg.authorizer  # type: ignore[assignment]
    return out


async def test_identities_are_what_kube_apiserver_reports(identities):
    assert identities["anonymous"].groups == ("system:unauthenticated",)
    assert identities["bootstrap"].groups == (
        "system:bootstrappers",
        "system:bootstrappers:kubeadm:default-node-token",
        "system:authenticated",
    )
    assert identities["node-a"].groups == ("system:nodes", "system:authenticated")
    assert identities["admin"].groups == ("kubeadm:cluster-admins", "system:authenticated")
    assert identities["super-admin"].groups == ("system:masters", "system:authenticated")
    assert identities["sa"].groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    )
    assert identities["sa"].uid == "uid-sa-a-sa"


@pytest.mark.parametrize("name,request_kwargs,cells", MATRIX, ids=[m[0] for m in MATRIX])
async def test_matrix(identities, name, request_kwargs, cells):
    authorizer = identities["_authorizer"]
    failures = []
    for ident in IDS:
        attrs = Attributes(user=identities[ident], **request_kwargs)
        decision, reason = await authorizer(attrs)
        expected = cells[ident]
        if expected is ALLOW:
            if decision is not Decision.ALLOW:
                failures.append(f"{ident}: expected ALLOW, got {forbidden_message(attrs, reason)!r}")
            continue
        want = expected.format(user=USERS[ident], node=ident, base=forbidden_message(attrs, ""))
        got = forbidden_message(attrs, reason) if decision is not Decision.ALLOW else "ALLOW"
        if got != want:
            failures.append(f"{ident}: expected {want!r}\n   got {got!r}")
    assert not failures, "\n".join(failures)


async def test_denials_carry_no_secret(identities):
    attrs = Attributes(user=identities["bootstrap"], **res("list", "secrets", "kube-system"))
    decision, reason = await identities["_authorizer"](attrs)
    assert decision is Decision.NO_OPINION
    assert "0123456789abcdef" not in forbidden_message(attrs, reason)
