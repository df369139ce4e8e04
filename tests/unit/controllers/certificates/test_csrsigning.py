"""csrsigning: signer policies, which CSRs get signed, and the certificates the authority issues (real keys, openssl)."""

from __future__ import annotations

import base64
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from csrfixtures import csr_object, make_ca, make_request

from pykubeadm.controllers.certificates.signer.authority import CAFiles, SigningError, ttl_for
from pykubeadm.controllers.certificates.signer.controller import failed_condition, sign_decision, validate_for_signer

APPROVED = [{"type": "Approved", "status": "True", "reason": "AutoApproved", "message": "m"}]
YEAR = timedelta(hours=8760)


def test_only_approved_unsigned_not_failed_builtin_csrs_are_signed() -> None:
    _, pem = make_request()
    assert sign_decision(csr_object(pem, conditions=APPROVED))
    assert not sign_decision(csr_object(pem))  # pending
    denied = [{"type": "Denied", "status": "True", "reason": "KubectlDeny"}]
    assert not sign_decision(csr_object(pem, conditions=denied))
    assert not sign_decision(csr_object(pem, conditions=APPROVED + denied))
    failed = [{"type": "Failed", "status": "True", "reason": "SignerValidationFailure"}]
    assert not sign_decision(csr_object(pem, conditions=APPROVED + failed))
    assert not sign_decision(csr_object(pem, conditions=APPROVED, certificate="eA=="))
    assert not sign_decision(csr_object(pem, conditions=APPROVED, signer="example.com/other"))


@pytest.mark.parametrize(
    ("signer", "request_kwargs", "usages", "problem"),
    [
        ("kubernetes.io/kube-apiserver-client", {"cn": "alice", "orgs": ("devs",)}, ("client auth",), None),
        (
            "kubernetes.io/kube-apiserver-client",
            {"cn": "alice"},
            ("digital signature", "key encipherment", "client auth"),
            None,
        ),
        (
            "kubernetes.io/kube-apiserver-client",
            {"cn": "alice"},
            ("server auth", "client auth"),
            "invalid usage for client certificate: server auth",
        ),
        (
            "kubernetes.io/kube-apiserver-client",
            {"cn": "alice"},
            ("digital signature",),
            "missing required usage for client certificate: client auth",
        ),
        ("kubernetes.io/kube-apiserver-client-kubelet", {}, ("digital signature", "client auth"), None),
        (
            "kubernetes.io/kube-apiserver-client-kubelet",
            {"dns": ("x",)},
            ("digital signature", "client auth"),
            "DNS subjectAltNames are not allowed",
        ),
        ("kubernetes.io/kubelet-serving", {"ips": ("10.0.0.5",)}, ("digital signature", "server auth"), None),
        (
            "kubernetes.io/kubelet-serving",
            {},
            ("digital signature", "server auth"),
            "DNS or IP subjectAltName is required",
        ),
        (
            "kubernetes.io/kubelet-serving",
            {"ips": ("10.0.0.5",), "uris": ("spiffe://a/b",)},
            ("digital signature", "server auth"),
            "URI subjectAltNames are not allowed",
        ),
        ("kubernetes.io/legacy-unknown", {"cn": "anything", "orgs": ("system:masters",)}, ("server auth",), None),
    ],
)
def test_signer_policies(signer: str, request_kwargs: dict, usages: tuple, problem: str | None) -> None:
    req, _ = make_request(**request_kwargs)
    assert validate_for_signer(signer, req, usages) == problem


def test_failed_condition_shape() -> None:
    now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert failed_condition("subject organization is not system:nodes", now) == {
        "type": "Failed",
        "status": "True",
        "reason": "SignerValidationFailure",
        "message": "subject organization is not system:nodes",
        "lastUpdateTime": "2025-01-02T03:04:05Z",
    }


def test_ttl_is_min_of_duration_and_expiration_seconds_clamped_to_ten_minutes() -> None:
    assert ttl_for(None, YEAR) == YEAR
    assert ttl_for(3600, YEAR) == timedelta(hours=1)
    assert ttl_for(10 * 365 * 86400, YEAR) == YEAR
    assert ttl_for(60, YEAR) == timedelta(minutes=10)
    assert ttl_for(7200, timedelta(hours=1)) == timedelta(hours=1)


def test_issued_client_certificate(tmp_path: Path) -> None:
    ca = make_ca()
    req, _ = make_request(cn="system:node:worker-1")
    now = datetime.now(UTC).replace(microsecond=0)
    cert = ca.sign(req, ["digital signature", "client auth"], YEAR, now=now)
    assert cert.subject == req.subject
    assert cert.issuer == ca.certificate.subject
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:nodes"
    assert cert.not_valid_before_utc == now - timedelta(minutes=5)
    assert cert.not_valid_after_utc == now + YEAR - timedelta(minutes=5)
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    assert list(eku.value) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    ku = cert.extensions.get_extension_for_class(x509.KeyUsage)
    assert ku.critical and ku.value.digital_signature and not ku.value.key_encipherment
    bc = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert bc.critical and not bc.value.ca
    with pytest.raises(x509.ExtensionNotFound):
        cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert 0 < cert.serial_number < 2**128
    assert cert.public_key() == req.public_key()
    # openssl agrees it chains to the CA and is a client certificate
    (tmp_path / "ca.crt").write_bytes(ca.certificate.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "leaf.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    out = subprocess.run(
        ["openssl", "verify", "-purpose", "sslclient", "-CAfile", str(tmp_path / "ca.crt"), str(tmp_path / "leaf.crt")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    bad = subprocess.run(
        ["openssl", "verify", "-purpose", "sslserver", "-CAfile", str(tmp_path / "ca.crt"), str(tmp_path / "leaf.crt")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0


def test_requested_extensions_are_dropped_and_sans_copied() -> None:
    ca = make_ca()
    req, _ = make_request(ips=("10.0.0.5",), dns=("worker-1",))
    cert = ca.sign(req, ["digital signature", "key encipherment", "server auth"], YEAR)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["worker-1"]
    assert [str(i) for i in sans.get_values_for_type(x509.IPAddress)] == ["10.0.0.5"]
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH
    ]


def test_ekus_sorted_in_go_order() -> None:
    ca = make_ca()
    req, _ = make_request()
    cert = ca.sign(req, ["client auth", "server auth", "digital signature"], YEAR)
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH,
        ExtendedKeyUsageOID.CLIENT_AUTH,
    ]


def test_short_ttl_is_not_shortened_by_backdate() -> None:
    ca = make_ca()
    req, _ = make_request()
    now = datetime.now(UTC).replace(microsecond=0)
    cert = ca.sign(req, ["client auth"], timedelta(hours=1), now=now)
    assert cert.not_valid_after_utc == now + timedelta(hours=1)
    assert cert.not_valid_before_utc == now - timedelta(minutes=5)


def test_not_after_is_clamped_to_the_ca() -> None:
    ca = make_ca(days=2)
    req, _ = make_request()
    cert = ca.sign(req, ["client auth"], YEAR)
    assert cert.not_valid_after_utc == ca.certificate.not_valid_after_utc


def test_expired_ca_refuses() -> None:
    ca = make_ca(days=1)
    req, _ = make_request()
    with pytest.raises(SigningError, match="expired"):
        ca.sign(req, ["client auth"], YEAR, now=datetime.now(UTC) + timedelta(days=2))


def test_unknown_usage_is_an_error() -> None:
    ca = make_ca()
    req, _ = make_request()
    with pytest.raises(SigningError, match="unrecognized usage values"):
        ca.sign(req, ["client auth", "teleport"], YEAR)


def test_ecdsa_ca_and_reload_on_change(tmp_path: Path) -> None:
    cert_file, key_file = tmp_path / "ca.crt", tmp_path / "ca.key"

    def write(ca) -> None:  # type: ignore[no-untyped-def]
        cert_file.write_bytes(ca.certificate.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            ca.key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )

    first = make_ca(key=ec.generate_private_key(ec.SECP256R1()))
    write(first)
    files = CAFiles(cert_file, key_file)
    req, _ = make_request()
    cert = files.current().sign(req, ["client auth"], YEAR)
    assert cert.issuer == first.certificate.subject
    first.certificate.public_key().verify(  # type: ignore[call-arg]
        cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm)
    )
    second = make_ca()
    write(second)
    assert files.current().certificate == second.certificate
    # files that break later leave the last good pair in use (kube's dynamic cert/key loader keeps its content)
    key_file.write_text("not a key")
    assert files.current().certificate == second.certificate
    key_file.unlink()
    assert files.current().certificate == second.certificate
    # without a first good load there is nothing to keep: the error names the file
    with pytest.raises(SigningError, match=r"ca\.key"):
        CAFiles(cert_file, key_file).current()


def test_issued_pem_is_base64_in_status() -> None:
    ca = make_ca()
    req, _ = make_request()
    pem = ca.sign(req, ["client auth"], YEAR).public_bytes(serialization.Encoding.PEM)
    assert x509.load_pem_x509_certificate(base64.b64decode(base64.b64encode(pem))).subject == req.subject
