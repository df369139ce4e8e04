"""The TLS-bootstrapping page's manual setup (issue 9): a token-file user in system:bootstrappers, with the page's
ClusterRoleBindings, may create CSRs and is auto-approvable exactly like a bootstrap token; without the bindings it
may not."""

from __future__ import annotations

from pykubeadm.apiserver.authn.config import build_auth
from pykubeadm.apiserver.authn.user import AuthRequest
from pykubeadm.apiserver.authz import reviews
from pykubeadm.apiserver.authz.bootstrap_policy import default_policy
from pykubeadm.apiserver.objects import DictObjectSource
from tests.unit.apiserver_auth.helpers import STATIC_TOKEN

RBAC = "rbac.authorization.k8s.io"
PAGE_BINDINGS = [
    ("create-csrs-for-bootstrapping", "system:bootstrappers", "system:node-bootstrapper"),
    ("auto-approve-csrs-for-group", "system:bootstrappers",
     "system:certificates.k8s.io:certificatesigningrequests:nodeclient"),
    ("auto-approve-renewals-for-nodes", "system:nodes",
     "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"),
]  # fmt: skip


def _source(with_page_bindings: bool) -> DictObjectSource:
    src = DictObjectSource()
    for obj in default_policy():
        src.put(f"{obj['kind'].lower()}s.{RBAC}", obj)
    if with_page_bindings:
        for name, group, role in PAGE_BINDINGS:
            src.put(f"clusterrolebindings.{RBAC}", {
                "kind": "ClusterRoleBinding", "metadata": {"name": name},
                "subjects": [{"kind": "Group", "name": group, "apiGroup": RBAC}],
                "roleRef": {"kind": "ClusterRole", "name": role, "apiGroup": RBAC}})  # fmt: skip
    return src


def _sar(user, verb: str, sub: str = "") -> dict:
    return {"spec": {"user": user.name, "groups": list(user.groups), "resourceAttributes": {
        "verb": verb, "group": "certificates.k8s.io", "resource": "certificatesigningrequests", "subresource": sub}}}  # fmt: skip


async def test_token_file_user_bootstraps_like_a_bootstrap_token(pki_dir):
    for bindings, expected in ((True, True), (False, False)):
        cfg = build_auth({"token-auth-file": str(pki_dir / "tokens.csv"), "authorization-mode": "Node,RBAC"},
                         _source(bindings))  # fmt: skip
        user = await cfg.authenticator(AuthRequest({"Authorization": f"Bearer {STATIC_TOKEN}"}))
        assert (user.name, user.uid) == ("kubelet-bootstrap", "10001")
        assert user.groups == ("system:bootstrappers", "system:authenticated")
        for verb in ("create", "get", "list", "watch"):
            out = await reviews.subject_access_review(_sar(user, verb), cfg.authorizer)
            assert out["status"]["allowed"] is expected, verb
        # what csrapproving asks before auto-approving the kubelet's first CSR
        out = await reviews.subject_access_review(_sar(user, "create", "nodeclient"), cfg.authorizer)
        assert out["status"]["allowed"] is expected
