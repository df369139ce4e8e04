"""Review APIs: SubjectAccessReview family, SelfSubjectRulesReview, SelfSubjectReview and TokenReview."""

from __future__ import annotations

import pytest

from pykubeadm.apiserver.authn import reviews as authn_reviews
from pykubeadm.apiserver.authn.config import build_auth
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz import reviews as authz_reviews
from pykubeadm.apiserver.authz.messages import StatusError
from tests.unit.apiserver_auth.helpers import BOOTSTRAP_TOKEN, ISSUER, bound_claims, kubeadm_flags, mint_jwt

BOOT = UserInfo("system:bootstrap:abcdef", groups=("system:bootstrappers",
                                                    "system:bootstrappers:kubeadm:default-node-token",
                                                    "system:authenticated"))  # fmt: skip
NODE_A = UserInfo("system:node:node-a", groups=("system:nodes", "system:authenticated"))
ANON = UserInfo("system:anonymous", groups=("system:unauthenticated",))


@pytest.fixture
def cfg(pki_dir, source):
    return build_auth(kubeadm_flags(pki_dir), source)


def can_i(verb: str, resource: str, **kw) -> dict:
    """The body kubectl auth can-i sends."""
    return {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": {"resourceAttributes": {"verb": verb, "resource": resource, **kw}}, "status": {"allowed": False}}  # fmt: skip


async def test_self_subject_access_review(cfg):
    out = await authz_reviews.self_subject_access_review(
        can_i("create", "certificatesigningrequests", group="certificates.k8s.io"), BOOT, cfg.authorizer
    )
    assert out["status"]["allowed"] is True
    assert out["status"]["reason"] == (
        'RBAC: allowed by ClusterRoleBinding "kubeadm:kubelet-bootstrap" of ClusterRole "system:node-bootstrapper" '
        'to Group "system:bootstrappers:kubeadm:default-node-token"'
    )
    assert out["spec"]["resourceAttributes"]["resource"] == "certificatesigningrequests"
    out = await authz_reviews.self_subject_access_review(can_i("list", "secrets", namespace="kube-system"), BOOT,
                                                         cfg.authorizer)  # fmt: skip
    assert out["status"] == {"allowed": False}
    out = await authz_reviews.self_subject_access_review(can_i("get", "secrets", namespace="default", name="b-secret"),
                                                         NODE_A, cfg.authorizer)  # fmt: skip
    assert out["status"] == {"allowed": False,
                             "reason": "no relationship found between node 'node-a' and this object"}  # fmt: skip
    non_resource = {"spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}}
    assert (await authz_reviews.self_subject_access_review(non_resource, ANON, cfg.authorizer))["status"]["allowed"]


async def test_subject_access_review_for_another_user(cfg):
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "system:bootstrap:abcdef", "groups": list(BOOT.groups),
                     "resourceAttributes": {"verb": "create", "group": "certificates.k8s.io",
                                            "resource": "certificatesigningrequests", "subresource": "nodeclient"}}}  # fmt: skip
    out = await authz_reviews.subject_access_review(body, cfg.authorizer)
    assert out["status"]["allowed"] is True
    body["spec"]["groups"] = []
    assert (await authz_reviews.subject_access_review(body, cfg.authorizer))["status"]["allowed"] is False


async def test_access_review_validation_errors(cfg):
    with pytest.raises(StatusError) as err:
        await authz_reviews.subject_access_review({"spec": {"resourceAttributes": {"verb": "get"}}}, cfg.authorizer)
    assert err.value.code == 422
    assert err.value.message == (
        'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user '
        "or group must be specified"
    )
    with pytest.raises(StatusError) as err:
        await authz_reviews.self_subject_access_review({"spec": {}}, BOOT, cfg.authorizer)
    assert "exactly one of nonResourceAttributes or resourceAttributes must be specified" in err.value.message
    with pytest.raises(StatusError):
        await authz_reviews.local_subject_access_review(
            {"spec": {"user": "x", "resourceAttributes": {"namespace": "other", "verb": "get"}}}, "dev", cfg.authorizer
        )


async def test_self_subject_rules_review(cfg):
    body = {"spec": {"namespace": "kube-system"}}
    out = await authz_reviews.self_subject_rules_review(body, BOOT, [cfg.rbac])
    status = out["status"]
    assert status["incomplete"] is False
    assert {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["kubeadm-certs"]} in (
        status["resourceRules"]
    )
    assert any("/healthz" in r["nonResourceURLs"] for r in status["nonResourceRules"])
    masters = UserInfo("root", groups=("system:masters", "system:authenticated"))
    out = await authz_reviews.self_subject_rules_review(body, masters, [cfg.rbac])
    assert out["status"]["resourceRules"][0] == {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    out = await authz_reviews.self_subject_rules_review(body, NODE_A, [cfg.rbac])
    assert out["status"]["incomplete"] is True
    assert out["status"]["evaluationError"] == "node authorizer does not support user rule resolution"


async def test_self_subject_review_is_whoami():
    user = UserInfo("jane", "uid-1", ("devs", "system:authenticated"), {"scopes": ("a",)})
    out = await authn_reviews.self_subject_review({}, user)
    assert out["kind"] == "SelfSubjectReview" and out["apiVersion"] == "authentication.k8s.io/v1"
    assert out["status"]["userInfo"] == {"username": "jane", "uid": "uid-1", "groups": ["devs", "system:authenticated"],
                                         "extra": {"scopes": ["a"]}}  # fmt: skip
    out = await authn_reviews.self_subject_review({"apiVersion": "authentication.k8s.io/v1beta1"}, UserInfo("x"))
    assert out["apiVersion"] == "authentication.k8s.io/v1beta1" and out["status"]["userInfo"] == {"username": "x"}


async def test_token_review(cfg, sa_key):
    def review(token, audiences=None):
        spec = {"token": token}
        if audiences:
            spec["audiences"] = audiences
        return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}

    out = await authn_reviews.token_review(review(BOOTSTRAP_TOKEN), cfg.token_authenticator, cfg.api_audiences)
    assert out["status"]["authenticated"] is True
    assert out["status"]["user"]["username"] == "system:bootstrap:abcdef"
    assert out["status"]["user"]["groups"][-1] == "system:authenticated"
    assert out["status"]["audiences"] == [ISSUER]
    sa_token = mint_jwt(sa_key, bound_claims("default", "a-sa", "uid-sa-a-sa", aud=[ISSUER, "vault"]))
    out = await authn_reviews.token_review(review(sa_token, ["vault"]), cfg.token_authenticator, cfg.api_audiences)
    assert out["status"]["authenticated"] is True and out["status"]["audiences"] == ["vault"]
    out = await authn_reviews.token_review(review(sa_token, ["other"]), cfg.token_authenticator, cfg.api_audiences)
    assert out["status"]["authenticated"] is False and "audiences" in out["status"]["error"]
    out = await authn_reviews.token_review(
        review("abcdef.ffffffffffffffff"), cfg.token_authenticator, cfg.api_audiences
    )
    assert out["status"] == {"user": {}, "authenticated": False, "error": "invalid bearer token"}
    with pytest.raises(StatusError) as err:
        await authn_reviews.token_review(review(""), cfg.token_authenticator, cfg.api_audiences)
    assert (err.value.code, err.value.message) == (400, "token is required for TokenReview in authentication")
