"""csrservingapproving's policy: which kubelet serving CSRs it approves and the first field/SAN it names otherwise."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from csrfixtures import csr_object, make_request

from pykubeadm.controllers.app.manager import enabled_controllers
from pykubeadm.controllers.certificates.csrservingapproving import check_serving_csr
from pykubeadm.controllers.certificates.csrutil import parse_csr

SERVING = "kubernetes.io/kubelet-serving"
NODE: dict[str, Any] = {
    "metadata": {"name": "worker-1"},
    "status": {
        "addresses": [
            {"type": "InternalIP", "address": "10.0.0.1"},
            {"type": "Hostname", "address": "worker-1"},
        ]
    },
}


def judge(
    *,
    request: dict[str, Any] | None = None,
    username: str = "system:node:worker-1",
    groups: tuple[str, ...] = ("system:nodes", "system:authenticated"),
    usages: tuple[str, ...] = ("digital signature", "server auth"),
    node: dict[str, Any] | None = NODE,
) -> tuple[str, str | None]:
    kwargs: dict[str, Any] = {"ips": ("10.0.0.1",), "dns": ("worker-1",)}
    kwargs.update(request or {})
    _, pem = make_request(**kwargs)
    csr = csr_object(pem, signer=SERVING, usages=usages, username=username, groups=groups)
    verdict = check_serving_csr(csr["spec"], parse_csr(csr), node)
    return verdict.field, verdict.problem


def test_the_nodes_own_addresses_are_approved() -> None:
    assert judge() == ("", None)


def test_a_subset_of_the_addresses_and_rsa_with_key_encipherment_are_approved() -> None:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert (
        judge(request={"dns": (), "key": rsa_key}, usages=("digital signature", "key encipherment", "server auth"))[1]
        is None
    )
    assert judge(request={"key": ec.generate_private_key(ec.SECP384R1())})[1] is None


def test_another_nodes_ip_names_that_san() -> None:
    field, problem = judge(request={"ips": ("10.0.0.1", "10.0.0.2")})
    assert field == "IP:10.0.0.2"
    assert problem == "IP subjectAltName 10.0.0.2 is not an address of Node worker-1"


def test_another_dns_name_names_that_san() -> None:
    field, problem = judge(request={"dns": ("worker-1", "worker-2")})
    assert (field, problem) == ("DNS:worker-2", "DNS subjectAltName worker-2 is not an address of Node worker-1")


@pytest.mark.parametrize(
    ("kwargs", "field", "text"),
    [
        ({"username": "system:bootstrap:abcdef"}, "spec.username", "is not a node"),
        ({"groups": ("system:authenticated",)}, "spec.groups", "is not in group system:nodes"),
        (
            {"request": {"cn": "system:node:worker-2"}},
            "subject",
            "is not exactly O=system:nodes, CN=system:node:worker-1",
        ),
        ({"request": {"orgs": ("system:nodes", "x")}}, "subject", "is not exactly"),
        ({"request": {"orgs": ()}}, "subject", "is not exactly"),
        ({"usages": ("digital signature", "server auth", "client auth")}, "spec.usages", "are not"),
        ({"usages": ("server auth",)}, "spec.usages", "are not"),
        ({"request": {"key": ec.generate_private_key(ec.SECP521R1())}}, "publicKey", "secp521r1 is not allowed"),
        ({"request": {"key": rsa.generate_private_key(65537, 1024)}}, "publicKey", "1024 bits is too small"),  # noqa: S505
        ({"request": {"ips": (), "dns": ()}}, "subjectAltName", "at least one DNS or IP subjectAltName"),
        ({"request": {"emails": ("a@b.c",)}}, "email:a@b.c", "email subjectAltName a@b.c is not allowed"),
        ({"request": {"uris": ("spiffe://x/y",)}}, "URI:spiffe://x/y", "URI subjectAltName"),
        ({"node": None}, "node", "Node worker-1 not found"),
    ],
)
def test_everything_else_stays_pending_naming_the_field(kwargs: dict[str, Any], field: str, text: str) -> None:
    got_field, problem = judge(**kwargs)
    assert got_field == field
    assert problem is not None and text in problem


def test_the_approver_is_off_unless_named_in_controllers() -> None:
    assert "csrservingapproving" not in enabled_controllers(["*", "bootstrapsigner", "tokencleaner"])
    assert "csrservingapproving" in enabled_controllers(["*", "csrservingapproving"])
    assert "csrservingapproving" in enabled_controllers(["*", "certificatesigningrequest-serving-approving-controller"])
