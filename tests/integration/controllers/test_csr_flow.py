"""Issue 6 acceptance, CSR part: our apiserver + a real controller-manager process, clients over HTTPS."""

from __future__ import annotations

import base64
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from harness import (
    ControllerManager,
    create_token,
    csr_body,
    csr_pem,
    embedded_kubeconfig,
    wait_until,
)
from lightkube import Client
from lightkube.resources.certificates_v1 import CertificateSigningRequest as CSR

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

SERVING = "kubernetes.io/kubelet-serving"


@pytest.fixture(scope="module")
def kcm(start_kcm: Callable[..., ControllerManager]) -> ControllerManager:
    return start_kcm()


@pytest.fixture(scope="module")
def bootstrap_client(api: ApiServer, kcm: ControllerManager) -> Client:
    tid, secret = create_token(api)
    return sync_client(
        embedded_kubeconfig(
            api, api.dir / "bootstrap-kubelet.conf", "tls-bootstrap-token-user", token=f"{tid}.{secret}"
        )
    )


@pytest.fixture(scope="module")
def admin(api: ApiServer) -> Client:
    return sync_client(api.kubeconfig())


def issued(client: Client, name: str, timeout: float) -> CSR:
    def check() -> CSR | None:
        obj = client.get(CSR, name)
        return obj if obj.status and obj.status.certificate else None

    return wait_until(check, timeout, what=f"CSR {name} issued")


def conditions(client: Client, name: str) -> list[str]:
    obj = client.get(CSR, name)
    return [c.type for c in (obj.status.conditions or [])] if obj.status else []


def leaf(obj: CSR) -> x509.Certificate:
    return x509.load_pem_x509_certificates(base64.b64decode(obj.status.certificate))[0]


def test_bootstrap_token_csr_is_approved_and_issued_within_2s(
    api: ApiServer, bootstrap_client: Client, tmp_path: Path
) -> None:
    start = time.monotonic()
    created = bootstrap_client.create(CSR.from_dict(csr_body(csr_pem("system:node:worker-1"))))
    name = created.metadata.name
    assert name.startswith("csr-")
    assert created.spec.username.startswith("system:bootstrap:")
    obj = issued(bootstrap_client, name, 2.0)
    assert time.monotonic() - start < 2.0
    (approved,) = [c for c in obj.status.conditions if c.type == "Approved"]
    assert (approved.status, approved.reason, approved.message) == (
        "True",
        "AutoApproved",
        "Auto approving kubelet client certificate after SubjectAccessReview.",
    )
    cert = leaf(obj)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:worker-1"
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:nodes"]
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
    (tmp_path / "leaf.crt").write_bytes(base64.b64decode(obj.status.certificate))
    out = subprocess.run(
        ["openssl", "verify", "-CAfile", str(api.pki.ca_cert), str(tmp_path / "leaf.crt")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and ": OK" in out.stdout, out.stdout + out.stderr
    text = subprocess.run(
        ["openssl", "x509", "-noout", "-text", "-in", str(tmp_path / "leaf.crt")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "TLS Web Client Authentication" in text and "TLS Web Server Authentication" not in text


NEGATIVE_CASES = {
    "extra-usage": ({}, {"usages": ("digital signature", "client auth", "server auth")}),
    "dns-san": ({"dns": ("worker-1",)}, {}),
    "ip-san": ({"ips": ("10.0.0.7",)}, {}),
    "wrong-organization": ({"orgs": ("system:masters",)}, {}),
    "extra-organization": ({"orgs": ("system:nodes", "admins")}, {}),
    "cn-without-system-node-prefix": ({"cn": "worker-1"}, {}),
    "other-signer": ({}, {"signer": "kubernetes.io/kube-apiserver-client"}),
}


def test_non_kubelet_client_csrs_stay_pending(bootstrap_client: Client) -> None:
    names = {
        case: bootstrap_client.create(CSR.from_dict(csr_body(csr_pem(**pem_kwargs), **body_kwargs))).metadata.name
        for case, (pem_kwargs, body_kwargs) in NEGATIVE_CASES.items()
    }
    time.sleep(1.5)  # a matching CSR is issued within ~0.1 s
    for case, name in names.items():
        obj = bootstrap_client.get(CSR, name)
        assert not (obj.status and obj.status.conditions), (case, obj.status)
        assert not (obj.status and obj.status.certificate), case


def test_requester_without_nodeclient_binding_stays_pending(api: ApiServer, kcm: ControllerManager) -> None:
    # a token group that may create CSRs (node-bootstrapper) but has no nodeclient auto-approve binding
    group = "system:bootstrappers:other-group"
    api.kubectl(
        "apply",
        "-f",
        "-",
        input=yaml.safe_dump(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "test:other-group-bootstrap"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "system:node-bootstrapper",
                },
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
            }
        ),
    )
    tid, secret = create_token(api, groups=group)
    client = sync_client(embedded_kubeconfig(api, api.dir / "other.conf", "other", token=f"{tid}.{secret}"))
    name = client.create(CSR.from_dict(csr_body(csr_pem("system:node:worker-9")))).metadata.name
    time.sleep(1.5)
    obj = client.get(CSR, name)
    assert not (obj.status and obj.status.conditions)
    assert "but subject access review was not approved" in kcm.log()
    # once the group is allowed to auto-approve, the pending CSR is approved promptly (not after its backoff)
    api.kubectl(
        "create",
        "clusterrolebinding",
        "test:other-group-autoapprove",
        "--clusterrole=system:certificates.k8s.io:certificatesigningrequests:nodeclient",
        f"--group={group}",
    )
    issued(client, name, 2.0)


def test_node_renewal_is_approved_as_selfnodeclient(api: ApiServer, kcm: ControllerManager) -> None:
    node = sync_client(api.kubeconfig_for("system:node:worker-2", ["system:nodes"]))
    name = node.create(CSR.from_dict(csr_body(csr_pem("system:node:worker-2")))).metadata.name
    obj = issued(node, name, 2.0)
    (approved,) = [c for c in obj.status.conditions if c.type == "Approved"]
    assert approved.message == "Auto approving self kubelet client certificate after SubjectAccessReview."


def test_kubelet_serving_csr_needs_kubectl_approve_then_is_signed(
    api: ApiServer, kcm: ControllerManager, tmp_path: Path
) -> None:
    node = sync_client(api.kubeconfig_for("system:node:worker-3", ["system:nodes"]))
    body = csr_body(
        csr_pem("system:node:worker-3", ips=("127.0.10.3",), dns=("worker-3",)),
        signer=SERVING,
        usages=("digital signature", "server auth"),
    )
    name = node.create(CSR.from_dict(body)).metadata.name
    time.sleep(1.5)
    assert conditions(node, name) == []
    api.kubectl("certificate", "approve", name)
    obj = issued(node, name, 2.0)
    (approved,) = [c for c in obj.status.conditions if c.type == "Approved"]
    assert approved.reason == "KubectlApprove"
    cert = leaf(obj)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["worker-3"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.10.3"]
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH
    ]
    (tmp_path / "serving.crt").write_bytes(base64.b64decode(obj.status.certificate))
    out = subprocess.run(
        ["openssl", "verify", "-purpose", "sslserver", "-CAfile", str(api.pki.ca_cert), str(tmp_path / "serving.crt")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_denied_csr_is_never_signed(api: ApiServer, admin: Client, kcm: ControllerManager) -> None:
    body = csr_body(
        csr_pem("system:node:worker-4", ips=("127.0.10.4",)),
        signer=SERVING,
        usages=("digital signature", "server auth"),
    )
    name = admin.create(CSR.from_dict(body)).metadata.name
    api.kubectl("certificate", "deny", name)
    time.sleep(1.5)
    obj = admin.get(CSR, name)
    assert [c.type for c in obj.status.conditions] == ["Denied"]
    assert not obj.status.certificate


def test_policy_violation_gets_failed_condition(api: ApiServer, admin: Client, kcm: ControllerManager) -> None:
    # approved by an admin, but the kubelet-serving signer requires an IP or DNS SAN
    body = csr_body(csr_pem("system:node:worker-5"), signer=SERVING, usages=("digital signature", "server auth"))
    name = admin.create(CSR.from_dict(body)).metadata.name
    api.kubectl("certificate", "approve", name)

    def failed() -> object:
        obj = admin.get(CSR, name)
        return [c for c in obj.status.conditions or [] if c.type == "Failed"]

    (cond,) = wait_until(failed, 2.0, what="Failed condition")
    assert (cond.status, cond.reason, cond.message) == (
        "True",
        "SignerValidationFailure",
        "DNS or IP subjectAltName is required",
    )
    assert not admin.get(CSR, name).status.certificate


def test_expiration_seconds_shortens_the_certificate(api: ApiServer, admin: Client, kcm: ControllerManager) -> None:
    body = csr_body(
        csr_pem("alice", orgs=("devs",)),
        signer="kubernetes.io/kube-apiserver-client",
        usages=("digital signature", "client auth"),
        expiration_seconds=3600,
    )
    name = admin.create(CSR.from_dict(body)).metadata.name
    api.kubectl("certificate", "approve", name)
    cert = leaf(issued(admin, name, 2.0))
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert lifetime.total_seconds() == 3600 + 300  # NotBefore backdated 5 min, short TTL not shortened
