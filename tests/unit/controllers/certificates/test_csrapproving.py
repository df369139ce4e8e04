"""csrapproving: which CSRs are recognised as node client requests, and the SAR and condition it would send."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from csrfixtures import csr_object, make_request

from pykubeadm.controllers.certificates.approver.controller import approval_condition, recognize, sar_spec
from pykubeadm.controllers.certificates.csrutil import (
    parse_csr,
    validate_kubelet_client_csr,
    validate_kubelet_serving_csr,
)


def names(csr: dict) -> list[str]:
    return [r.name for r in recognize(csr, parse_csr(csr))]


def test_bootstrap_token_kubelet_client_csr_is_nodeclient_only() -> None:
    _, pem = make_request()
    assert names(csr_object(pem)) == ["nodeclient"]


def test_renewal_by_the_node_itself_is_selfnodeclient_then_nodeclient() -> None:
    _, pem = make_request(cn="system:node:worker-1")
    csr = csr_object(pem, username="system:node:worker-1", groups=("system:nodes", "system:authenticated"))
    assert names(csr) == ["selfnodeclient", "nodeclient"]


def test_rsa_usages_with_key_encipherment_are_accepted() -> None:
    _, pem = make_request(key=rsa.generate_private_key(public_exponent=65537, key_size=2048))
    csr = csr_object(pem, usages=("digital signature", "key encipherment", "client auth"))
    assert names(csr) == ["nodeclient"]


@pytest.mark.parametrize(
    ("request_kwargs", "csr_kwargs", "error"),
    [
        ({}, {"usages": ("digital signature", "client auth", "server auth")}, "usages did not match"),
        ({}, {"usages": ("client auth",)}, "usages did not match"),
        ({"dns": ("worker-1",)}, {}, "DNS subjectAltNames are not allowed"),
        ({"ips": ("10.0.0.1",)}, {}, "IP subjectAltNames are not allowed"),
        ({"emails": ("a@b.c",)}, {}, "Email subjectAltNames are not allowed"),
        ({"uris": ("spiffe://x/y",)}, {}, "URI subjectAltNames are not allowed"),
        ({"orgs": ("system:masters",)}, {}, "subject organization is not system:nodes"),
        ({"orgs": ("system:nodes", "extra")}, {}, "subject organization is not system:nodes"),
        ({"orgs": ()}, {}, "subject organization is not system:nodes"),
        ({"cn": "worker-1"}, {}, "subject common name does not begin with system:node:"),
        ({"cn": "system:nodes:worker-1"}, {}, "subject common name does not begin with system:node:"),
    ],
)
def test_non_kubelet_client_profiles_are_not_recognised(request_kwargs: dict, csr_kwargs: dict, error: str) -> None:
    req, pem = make_request(**request_kwargs)
    csr = csr_object(pem, **csr_kwargs)
    assert names(csr) == []
    problem = validate_kubelet_client_csr(req, csr["spec"]["usages"])
    assert problem is not None and problem.startswith(error)


def test_usage_error_lists_the_required_usages_like_go() -> None:
    req, _ = make_request()
    assert validate_kubelet_client_csr(req, ["client auth"]) == (
        "usages did not match [client auth digital signature key encipherment]"
    )


@pytest.mark.parametrize(
    "signer", ["kubernetes.io/kubelet-serving", "kubernetes.io/kube-apiserver-client", "example.com/custom"]
)
def test_other_signers_are_never_recognised(signer: str) -> None:
    _, pem = make_request()
    assert names(csr_object(pem, signer=signer)) == []


def test_kubelet_serving_csr_is_not_auto_approved() -> None:
    req, pem = make_request(ips=("10.0.0.1",), dns=("worker-1",))
    csr = csr_object(
        pem,
        signer="kubernetes.io/kubelet-serving",
        usages=("digital signature", "server auth"),
        username="system:node:worker-1",
        groups=("system:nodes",),
    )
    assert names(csr) == []
    assert validate_kubelet_serving_csr(req, csr["spec"]["usages"]) is None


def test_serving_profile_errors() -> None:
    req, _ = make_request()
    assert validate_kubelet_serving_csr(req, ["digital signature", "server auth"]) == (
        "DNS or IP subjectAltName is required"
    )
    req, _ = make_request(ips=("10.0.0.1",))
    assert validate_kubelet_serving_csr(req, ["client auth"]) == (
        "usages did not match [digital signature key encipherment server auth]"
    )


def test_self_recognition_needs_the_requester_to_be_the_subject() -> None:
    _, pem = make_request(cn="system:node:worker-2")
    csr = csr_object(pem, username="system:node:worker-1", groups=("system:nodes",))
    assert names(csr) == ["nodeclient"]


def test_sar_spec_carries_the_requester_identity() -> None:
    _, pem = make_request()
    csr = csr_object(pem)
    csr["spec"]["uid"] = "u-1"
    csr["spec"]["extra"] = {"scope": ["a"]}
    spec = sar_spec(csr, "nodeclient")
    assert spec == {
        "user": "system:bootstrap:abcdef",
        "uid": "u-1",
        "groups": ["system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", "system:authenticated"],
        "extra": {"scope": ["a"]},
        "resourceAttributes": {
            "group": "certificates.k8s.io",
            "resource": "certificatesigningrequests",
            "verb": "create",
            "subresource": "nodeclient",
            "version": "*",
        },
    }


def test_approval_condition_matches_kubernetes() -> None:
    assert approval_condition("Auto approving kubelet client certificate after SubjectAccessReview.") == {
        "type": "Approved",
        "status": "True",
        "reason": "AutoApproved",
        "message": "Auto approving kubelet client certificate after SubjectAccessReview.",
    }
