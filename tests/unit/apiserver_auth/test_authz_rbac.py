"""RBAC rule semantics, binding evaluation and reasons, the union combinator, and the exact 403 texts."""

from __future__ import annotations

import pytest

from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.attributes import Attributes, Decision
from pykubeadm.apiserver.authz.messages import forbidden_message, forbidden_status, unauthorized_status
from pykubeadm.apiserver.authz.rbac import RBACAuthorizer, rule_allows
from pykubeadm.apiserver.authz.union import always_deny, privileged_groups, union
from pykubeadm.apiserver.objects import DictObjectSource

U = UserInfo("jane", groups=("devs", "system:authenticated"))


def res(verb: str, resource: str, sub: str = "", name: str = "", group: str = "", ns: str = "") -> Attributes:
    return Attributes(U, verb, True, namespace=ns, api_group=group, resource=resource, subresource=sub, name=name)


def url(verb: str, path: str) -> Attributes:
    return Attributes(U, verb, False, path=path)


@pytest.mark.parametrize(
    "rule,attrs,allowed",
    [
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, res("get", "pods"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, res("list", "pods"), False),
        ({"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}, res("deletecollection", "pods"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, res("get", "pods", "log"), False),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}, res("get", "pods", "log"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}, res("get", "pods"), False),
        ({"verbs": ["update"], "apiGroups": ["*"], "resources": ["*/scale"]},
         res("update", "deployments", "scale", group="apps"), True),
        ({"verbs": ["update"], "apiGroups": ["*"], "resources": ["*/scale"]}, res("update", "deployments", group="apps"),
         False),
        ({"verbs": ["update"], "apiGroups": ["*"], "resources": ["*/scale"]},
         res("update", "deployments", "status", group="apps"), False),
        ({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]}, res("get", "pods", "exec"), True),
        ({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"]}, res("get", "deployments"), False),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["deployments"]},
         res("get", "deployments", group="apps"), False),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
         res("get", "secrets", name="a"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
         res("get", "secrets", name="b"), False),
        ({"verbs": ["list"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
         res("list", "secrets"), False),
        ({"verbs": ["approve"], "apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
          "resourceNames": ["kubernetes.io/*"]},
         res("approve", "signers", name="kubernetes.io/kubelet-serving", group="certificates.k8s.io"), False),
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, url("get", "/healthz"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, url("get", "/healthz/etcd"), False),
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz*"]}, url("get", "/healthz/etcd"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, url("get", "/apis/apps/v1"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, url("get", "/apis"), False),
        ({"verbs": ["get"], "nonResourceURLs": ["*"]}, url("get", "/anything"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, url("post", "/healthz"), False),
        ({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]}, url("get", "/healthz"), False),
        ({"verbs": ["get"], "nonResourceURLs": ["*"]}, res("get", "pods"), False),
    ],
)  # fmt: skip
def test_rule_matching(rule, attrs, allowed):
    assert rule_allows(rule, attrs) is allowed


def _src(*objs: tuple[str, dict]) -> DictObjectSource:
    src = DictObjectSource()
    for resource, obj in objs:
        src.put(resource, obj)
    return src


CR = "clusterroles.rbac.authorization.k8s.io"
CRB = "clusterrolebindings.rbac.authorization.k8s.io"
ROLE = "roles.rbac.authorization.k8s.io"
RB = "rolebindings.rbac.authorization.k8s.io"
READ_PODS = {
    "metadata": {"name": "pod-reader"},
    "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
}


def _rb(name, ns, kind, role, subjects):
    return {"metadata": {"name": name, "namespace": ns}, "roleRef": {"kind": kind, "name": role}, "subjects": subjects}


async def test_clusterrole_through_rolebinding_is_scoped_to_the_namespace():
    src = _src(
        (CR, READ_PODS), (RB, _rb("jane-pods", "dev", "ClusterRole", "pod-reader", [{"kind": "User", "name": "jane"}]))
    )
    authz = RBACAuthorizer(src)
    decision, reason = await authz(res("get", "pods", ns="dev", name="p"))
    assert decision is Decision.ALLOW
    assert reason == 'RBAC: allowed by RoleBinding "jane-pods/dev" of ClusterRole "pod-reader" to User "jane"'
    assert (await authz(res("get", "pods", ns="prod", name="p")))[0] is Decision.NO_OPINION
    assert (await authz(res("get", "pods", name="p")))[0] is Decision.NO_OPINION  # cluster scope


async def test_group_and_service_account_subjects_and_reasons():
    crb = {"metadata": {"name": "devs-read"}, "roleRef": {"kind": "ClusterRole", "name": "pod-reader"},
           "subjects": [{"kind": "Group", "name": "devs"}]}  # fmt: skip
    src = _src((CR, READ_PODS), (CRB, crb))
    decision, reason = await RBACAuthorizer(src)(res("get", "pods", ns="x"))
    assert decision is Decision.ALLOW
    assert reason == 'RBAC: allowed by ClusterRoleBinding "devs-read" of ClusterRole "pod-reader" to Group "devs"'
    sa_user = UserInfo("system:serviceaccount:dev:bot", groups=("system:serviceaccounts",))
    rb = _rb("bot", "dev", "ClusterRole", "pod-reader", [{"kind": "ServiceAccount", "name": "bot"}])
    src = _src((CR, READ_PODS), (RB, rb))
    attrs = Attributes(sa_user, "get", True, namespace="dev", resource="pods")
    decision, reason = await RBACAuthorizer(src)(attrs)
    assert reason == 'RBAC: allowed by RoleBinding "bot/dev" of ClusterRole "pod-reader" to ServiceAccount "bot/dev"'
    # A ClusterRoleBinding to a ServiceAccount subject without namespace matches nobody.
    crb_sa = {"metadata": {"name": "x"}, "roleRef": {"kind": "ClusterRole", "name": "pod-reader"},
              "subjects": [{"kind": "ServiceAccount", "name": "bot"}]}  # fmt: skip
    assert (await RBACAuthorizer(_src((CR, READ_PODS), (CRB, crb_sa)))(attrs))[0] is Decision.NO_OPINION


async def test_role_in_namespace_and_missing_role_reason():
    role = {"metadata": {"name": "r", "namespace": "dev"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]}  # fmt: skip
    src = _src((ROLE, role), (RB, _rb("b", "dev", "Role", "r", [{"kind": "User", "name": "jane"}])),
               (RB, _rb("dangling", "dev", "ClusterRole", "gone", [{"kind": "User", "name": "jane"}])))  # fmt: skip
    authz = RBACAuthorizer(src)
    assert (await authz(res("get", "configmaps", ns="dev")))[0] is Decision.ALLOW
    decision, reason = await authz(res("delete", "configmaps", ns="dev"))
    assert decision is Decision.NO_OPINION
    assert reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'


async def test_rbac_never_denies_and_union_semantics():
    src = _src()
    assert (await RBACAuthorizer(src)(res("get", "pods")))[0] is Decision.NO_OPINION
    masters = UserInfo("root", groups=("system:masters",))
    authz = union(privileged_groups(), RBACAuthorizer(src))
    assert (await authz(Attributes(masters, "delete", True, resource="nodes")))[0] is Decision.ALLOW
    assert (await authz(res("get", "pods")))[0] is Decision.NO_OPINION  # → 403 by the caller

    async def no_opinion_with_reason(attrs):
        return Decision.NO_OPINION, "first says no"

    decision, reason = await union(no_opinion_with_reason, always_deny(), privileged_groups())(
        Attributes(masters, "get", True, resource="pods")
    )
    assert (decision, reason) == (Decision.DENY, "Everything is forbidden.")
    decision, reason = await union(no_opinion_with_reason, no_opinion_with_reason)(res("get", "pods"))
    assert (decision, reason) == (Decision.NO_OPINION, "first says no\nfirst says no")


def test_forbidden_messages_exact():
    assert forbidden_message(res("get", "secrets", name="x", ns="kube-system")) == (
        'secrets "x" is forbidden: User "jane" cannot get resource "secrets" in API group "" in the namespace '
        '"kube-system"'
    )
    assert forbidden_message(res("list", "certificatesigningrequests", group="certificates.k8s.io")) == (
        'certificatesigningrequests.certificates.k8s.io is forbidden: User "jane" cannot list resource '
        '"certificatesigningrequests" in API group "certificates.k8s.io" at the cluster scope'
    )
    assert forbidden_message(res("update", "nodes", "status", name="n1"), "some reason") == (
        'nodes "n1" is forbidden: User "jane" cannot update resource "nodes/status" in API group "" at the cluster '
        "scope: some reason"
    )
    assert forbidden_message(url("get", "/metrics")) == 'forbidden: User "jane" cannot get path "/metrics"'
    status = forbidden_status(res("get", "deployments", name="web", group="apps", ns="d"))
    assert status["code"] == 403 and status["reason"] == "Forbidden" and status["status"] == "Failure"
    assert status["details"] == {"name": "web", "group": "apps", "kind": "deployments"}
    assert unauthorized_status()["message"] == "Unauthorized" and unauthorized_status()["code"] == 401
