"""RBAC escalation prevention: roles only with held rules (or `escalate`), bindings only to held roles (or `bind`)."""

from __future__ import annotations

import pytest

from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, AdmissionError, Operation
from pykubeadm.apiserver.admission.rbac_escalation import RBACEscalationCheck, covers
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.rbac import RBACAuthorizer
from pykubeadm.apiserver.authz.union import privileged_groups, union

G = "rbac.authorization.k8s.io"
SA = UserInfo("system:serviceaccount:default:a-sa", groups=("system:serviceaccounts", "system:authenticated"))


@pytest.mark.parametrize(
    "owner,requested,ok",
    [
        ([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}], [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}], True),
        ([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}], [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}], False),
        ([{"verbs": ["get"], "apiGroups": [""], "resources": ["*/status"]}], [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/status"]}], True),
        ([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]}], [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}], False),
        ([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a", "b"]}], [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["b"]}], True),
        ([{"verbs": ["get"], "nonResourceURLs": ["/logs/*"]}], [{"verbs": ["get"], "nonResourceURLs": ["/logs/kube"]}], True),
        ([{"verbs": ["get"], "nonResourceURLs": ["/logs"]}], [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}], False),
    ],
)  # fmt: skip
def test_covers(owner, requested, ok):
    assert covers(owner, requested) is ok


def _plugin(source):
    rbac = RBACAuthorizer(source)
    return RBACEscalationCheck(rbac, union(privileged_groups(), rbac))


async def test_service_account_cannot_mint_secret_reader(source):
    # Give the SA the right to create roles in default, but nothing about secrets.
    source.put(f"roles.{G}", {"metadata": {"name": "role-maker", "namespace": "default"},
                              "rules": [{"verbs": ["create"], "apiGroups": [G], "resources": ["roles", "rolebindings"]}]})  # fmt: skip
    source.put(f"rolebindings.{G}", {"metadata": {"name": "role-maker", "namespace": "default"},
                                     "roleRef": {"kind": "Role", "name": "role-maker"},
                                     "subjects": [{"kind": "ServiceAccount", "name": "a-sa"}]})  # fmt: skip
    role = {"metadata": {"name": "steal", "namespace": "default"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]}  # fmt: skip
    a = AdmissionAttributes(Operation.CREATE, "roles", SA, namespace="default", name="steal", group=G, obj=role)
    with pytest.raises(AdmissionError) as err:
        await _plugin(source).validate(a)
    assert err.value.message == (
        'roles.rbac.authorization.k8s.io "steal" is forbidden: user "system:serviceaccount:default:a-sa" '
        '(groups=["system:serviceaccounts" "system:authenticated"]) is attempting to grant RBAC permissions not '
        'currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}'
    )
    pods_role = {"metadata": {"name": "ok", "namespace": "default"},
                 "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}  # fmt: skip
    await _plugin(source).validate(
        AdmissionAttributes(Operation.CREATE, "roles", SA, namespace="default", name="ok", group=G, obj=pods_role)
    )
    binding = {"metadata": {"name": "b", "namespace": "default"}, "roleRef": {"kind": "ClusterRole", "name": "admin"},
               "subjects": [{"kind": "User", "name": "friend"}]}  # fmt: skip
    with pytest.raises(AdmissionError):
        await _plugin(source).validate(
            AdmissionAttributes(
                Operation.CREATE, "rolebindings", SA, namespace="default", name="b", group=G, obj=binding
            )
        )
    binding["roleRef"]["name"] = "view"  # the SA holds view in default
    await _plugin(source).validate(
        AdmissionAttributes(Operation.CREATE, "rolebindings", SA, namespace="default", name="b", group=G, obj=binding)
    )


async def test_admins_and_bind_verb(source):
    admin = UserInfo("kubernetes-admin", groups=("kubeadm:cluster-admins", "system:authenticated"))
    crb = {"metadata": {"name": "x"}, "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"}, "subjects": []}
    await _plugin(source).validate(
        AdmissionAttributes(Operation.CREATE, "clusterrolebindings", admin, group=G, obj=crb)
    )
    source.put(f"clusterroles.{G}", {"metadata": {"name": "binder"},
                                     "rules": [{"verbs": ["bind"], "apiGroups": [G], "resources": ["clusterroles"],
                                                "resourceNames": ["cluster-admin"]}]})  # fmt: skip
    source.put(f"clusterrolebindings.{G}", {"metadata": {"name": "binder"}, "roleRef": {"kind": "ClusterRole", "name": "binder"},
                                            "subjects": [{"kind": "User", "name": "delegate"}]})  # fmt: skip
    delegate = UserInfo("delegate", groups=("system:authenticated",))
    await _plugin(source).validate(
        AdmissionAttributes(Operation.CREATE, "clusterrolebindings", delegate, group=G, obj=crb)
    )
    crb["roleRef"]["name"] = "edit"
    with pytest.raises(AdmissionError):
        await _plugin(source).validate(
            AdmissionAttributes(Operation.CREATE, "clusterrolebindings", delegate, group=G, obj=crb)
        )
