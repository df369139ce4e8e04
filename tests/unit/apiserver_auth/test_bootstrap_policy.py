"""The default RBAC policy data: shape, markers, and the bindings the security invariants depend on."""

from __future__ import annotations

from pykubeadm.apiserver.authz.bootstrap_policy import NODE_RULES, default_policy


def _by(kind: str) -> dict[str, dict]:
    return {
        o["metadata"]["name"]: o for o in default_policy() if o["kind"] == kind and "namespace" not in o["metadata"]
    }


def test_every_object_is_marked_for_reconciliation():
    objs = default_policy()
    keys = set()
    for o in objs:
        assert o["apiVersion"] == "rbac.authorization.k8s.io/v1"
        assert o["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert o["metadata"]["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
        key = (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
        assert key not in keys
        keys.add(key)
    assert default_policy() is not objs and default_policy() == objs  # fresh copies


def test_every_binding_points_at_an_existing_role():
    objs = default_policy()
    cluster_roles = {o["metadata"]["name"] for o in objs if o["kind"] == "ClusterRole"}
    roles = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs if o["kind"] == "Role"}
    for o in objs:
        if o["kind"] == "ClusterRoleBinding":
            assert o["roleRef"]["name"] in cluster_roles
        elif o["kind"] == "RoleBinding":
            assert (o["metadata"]["namespace"], o["roleRef"]["name"]) in roles


def test_key_roles_and_bindings():
    roles, bindings = _by("ClusterRole"), _by("ClusterRoleBinding")
    for name in (
        "cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user", "system:public-info-viewer",
        "system:node-bootstrapper", "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver", "system:node", "system:node-proxier",
        "system:kube-controller-manager", "system:kube-scheduler", "system:monitoring", "system:volume-scheduler",
        "system:controller:certificate-controller", "system:controller:root-ca-cert-publisher",
        "system:controller:service-account-controller", "system:controller:node-controller",
    ):  # fmt: skip
        assert name in roles, name
    assert bindings["cluster-admin"]["subjects"] == [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:masters"}
    ]
    assert "subjects" not in bindings["system:node"]
    assert [s["name"] for s in bindings["system:public-info-viewer"]["subjects"]] == [
        "system:authenticated",
        "system:unauthenticated",
    ]
    assert bindings["system:controller:certificate-controller"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "certificate-controller", "namespace": "kube-system"}
    ]
    assert roles["system:node"]["rules"] == NODE_RULES
    assert "secrets" not in str(roles["view"]["rules"])


def test_namespaced_roles():
    objs = default_policy()
    named = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs}
    for ns, name in (
        ("kube-system", "extension-apiserver-authentication-reader"),
        ("kube-system", "system::leader-locking-kube-controller-manager"),
        ("kube-system", "system::leader-locking-kube-scheduler"),
        ("kube-system", "system:controller:bootstrap-signer"),
        ("kube-system", "system:controller:token-cleaner"),
        ("kube-public", "system:controller:bootstrap-signer"),
    ):
        assert ("Role", ns, name) in named
    signer = next(o for o in objs if o["kind"] == "Role" and o["metadata"]["namespace"] == "kube-public")
    assert {"verbs": ["update"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"]} in (
        signer["rules"]
    )
