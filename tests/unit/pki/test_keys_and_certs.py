"""pki.keys and pki.certs: key algorithms and PEM formats, CA and signed-cert fields, name checks, chain checks."""

from __future__ import annotations

import hashlib
import ipaddress
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.name import _ASN1Type
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykubeadm.errors import CertError
from pykubeadm.pki.certs import (
    AltNames,
    CertConfig,
    new_csr,
    new_self_signed_ca,
    new_signed_cert,
    try_load_cert,
    try_load_key,
    write_cert_and_key,
)
from pykubeadm.pki.keys import (
    encode_private_key_pem,
    encode_public_key_pem,
    generate_private_key,
    key_algorithm_name,
    public_key_pin,
)
from pykubeadm.pki.verify import verify_cert_chain, verify_hostname

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture(scope="module")
def ca() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = generate_private_key("ECDSA-P256")
    cfg = CertConfig("kubernetes", not_before=NOW - timedelta(minutes=5), not_after=NOW + timedelta(days=3650))
    return new_self_signed_ca(cfg, key), key


@pytest.mark.parametrize(
    ("algorithm", "kind", "size", "header"),
    [
        ("RSA-2048", rsa.RSAPrivateKey, 2048, b"-----BEGIN RSA PRIVATE KEY-----"),
        ("RSA-3072", rsa.RSAPrivateKey, 3072, b"-----BEGIN RSA PRIVATE KEY-----"),
        ("ECDSA-P256", ec.EllipticCurvePrivateKey, 256, b"-----BEGIN EC PRIVATE KEY-----"),
        ("ECDSA-P384", ec.EllipticCurvePrivateKey, 384, b"-----BEGIN EC PRIVATE KEY-----"),
    ],
)
def test_key_algorithms_and_pem(algorithm: str, kind: type, size: int, header: bytes) -> None:
    key = generate_private_key(algorithm)
    assert isinstance(key, kind) and key.key_size == size
    assert key_algorithm_name(key) == algorithm
    assert encode_private_key_pem(key).startswith(header)
    assert encode_public_key_pem(key.public_key()).startswith(b"-----BEGIN PUBLIC KEY-----")


def test_rsa_4096_and_unknown_algorithms() -> None:
    assert generate_private_key("RSA-4096").key_size == 4096
    with pytest.raises(CertError, match='cannot obtain key size from unknown RSA algorithm: "RSA-1024"'):
        generate_private_key("RSA-1024")
    with pytest.raises(CertError, match="unsupported encryption algorithm"):
        generate_private_key("ED25519")


def test_public_key_pin_is_sha256_of_spki(ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey]) -> None:
    cert, _ = ca
    der = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    pin = public_key_pin(cert.public_key())
    assert pin == "sha256:" + hashlib.sha256(der).hexdigest()
    assert len(pin) == len("sha256:") + 64


def test_self_signed_ca_fields(ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey]) -> None:
    cert, key = ca
    assert cert.subject == cert.issuer
    assert cert.subject.rfc4514_string() == "CN=kubernetes"
    bc = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert bc.critical and bc.value.ca and bc.value.path_length is None
    ku = cert.extensions.get_extension_for_class(x509.KeyUsage)
    assert ku.critical and ku.value.key_cert_sign and ku.value.digital_signature and ku.value.key_encipherment
    ski = cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    assert ski == x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    with pytest.raises(x509.ExtensionNotFound):
        cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["kubernetes"]
    assert cert.not_valid_before_utc == NOW - timedelta(minutes=5)
    assert cert.not_valid_after_utc == NOW + timedelta(days=3650)
    assert isinstance(cert.signature_hash_algorithm, hashes.SHA256)
    assert 1 <= cert.serial_number < 2**63


def test_signed_cert_fields_and_san_rules(ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey]) -> None:
    ca_cert, ca_key = ca
    alt = AltNames(
        ("node1", "kubernetes", "a.example.com", "kubernetes"),
        (ipaddress.ip_address("10.96.0.1"), ipaddress.ip_address("fd00::1"), ipaddress.ip_address("10.96.0.1")),
    )
    cfg = CertConfig(
        "kube-apiserver-kubelet-client",
        ("kubeadm:cluster-admins", "b_group"),
        alt,
        (ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH),
    )
    key = generate_private_key("ECDSA-P256")
    cert = new_signed_cert(cfg, key.public_key(), ca_cert, ca_key)
    # O before CN, all O values in one RDN; PrintableString unless a character forbids it (Go's choice)
    rdns = list(cert.subject.rdns)
    assert [a.oid for a in rdns[0]] == [NameOID.ORGANIZATION_NAME, NameOID.ORGANIZATION_NAME]
    assert rdns[1].get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kube-apiserver-kubelet-client"
    types = {a.value: a._type for rdn in rdns for a in rdn}
    assert types["kubeadm:cluster-admins"] == _ASN1Type.PrintableString
    assert types["b_group"] == _ASN1Type.UTF8String
    assert cert.issuer == ca_cert.subject
    # extensions in Go's order, with Go's criticality
    assert [type(e.value) for e in cert.extensions] == [
        x509.KeyUsage,
        x509.ExtendedKeyUsage,
        x509.BasicConstraints,
        x509.AuthorityKeyIdentifier,
        x509.SubjectAlternativeName,
    ]
    assert [e.critical for e in cert.extensions] == [True, False, True, False, False]
    ku = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert ku.digital_signature and ku.key_encipherment and not ku.key_cert_sign
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["a.example.com", "kubernetes", "node1"]  # dedup + sorted
    assert [str(i) for i in san.get_values_for_type(x509.IPAddress)] == ["10.96.0.1", "fd00::1"]  # dedup, order kept
    # NotBefore unset → the CA's NotBefore; NotAfter unset → now + 1 year
    assert cert.not_valid_before_utc == ca_cert.not_valid_before_utc
    assert abs(cert.not_valid_after_utc - (datetime.now(UTC) + timedelta(hours=8760))) < timedelta(minutes=1)
    aki = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    assert aki.key_identifier == ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    verify_cert_chain(cert, ca_cert)


def test_p384_signs_with_sha384() -> None:
    key = generate_private_key("ECDSA-P384")
    ca = new_self_signed_ca(CertConfig("etcd-ca"), key)
    assert isinstance(ca.signature_hash_algorithm, hashes.SHA384)


def test_csr_carries_subject_and_sans() -> None:
    key = generate_private_key("ECDSA-P256")
    csr = new_csr(CertConfig("node1", ("g",), AltNames(("b", "a", "a"), (ipaddress.ip_address("::1"),))), key)
    assert csr.is_signature_valid
    assert csr.subject.rfc4514_string() == "CN=node1,O=g"
    san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["a", "b"]


def test_verify_hostname_messages(ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey]) -> None:
    ca_cert, ca_key = ca
    key = generate_private_key("ECDSA-P256")
    alt = AltNames(("kubernetes", "*.example.com"), (ipaddress.ip_address("10.0.0.1"),))
    cert = new_signed_cert(CertConfig("x", alt_names=alt), key.public_key(), ca_cert, ca_key)
    verify_hostname(cert, "KUBERNETES")
    verify_hostname(cert, "api.example.com")
    verify_hostname(cert, "10.0.0.1")
    with pytest.raises(
        CertError, match=r"^x509: certificate is valid for \*\.example\.com, kubernetes, not a\.b\.example\.com$"
    ):
        verify_hostname(cert, "a.b.example.com")
    with pytest.raises(CertError, match=r"^x509: certificate is valid for 10\.0\.0\.1, not 10\.0\.0\.2$"):
        verify_hostname(cert, "10.0.0.2")
    bare = new_signed_cert(CertConfig("x"), key.public_key(), ca_cert, ca_key)
    with pytest.raises(CertError, match="because it doesn't contain any IP SANs"):
        verify_hostname(bare, "10.0.0.2")


def test_verify_chain_errors(ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey]) -> None:
    ca_cert, ca_key = ca
    other_key = generate_private_key("ECDSA-P256")
    other_ca = new_self_signed_ca(CertConfig("kubernetes"), other_key)  # same subject, other key
    key = generate_private_key("ECDSA-P256")
    cert = new_signed_cert(CertConfig("x"), key.public_key(), other_ca, other_key)
    with pytest.raises(CertError) as err:
        verify_cert_chain(cert, ca_cert)
    assert str(err.value) == (
        'x509: certificate signed by unknown authority (possibly because of "x509: ECDSA verification failure" while '
        'trying to verify candidate authority certificate "kubernetes")'
    )
    unrelated = new_self_signed_ca(CertConfig("front-proxy-ca"), other_key)
    cert2 = new_signed_cert(CertConfig("y"), key.public_key(), unrelated, other_key)
    with pytest.raises(CertError, match=r"^x509: certificate signed by unknown authority$"):
        verify_cert_chain(cert2, ca_cert)
    expired = new_signed_cert(
        CertConfig("z", not_before=NOW - timedelta(days=3), not_after=NOW - timedelta(days=1)),
        key.public_key(),
        ca_cert,
        ca_key,
    )
    with pytest.raises(CertError, match=r"x509: certificate has expired or is not yet valid: current time .* is after"):
        verify_cert_chain(expired, ca_cert, now=NOW)
    # through an intermediate CA
    inter_key = generate_private_key("ECDSA-P256")
    inter = new_signed_cert(CertConfig("intermediate"), inter_key.public_key(), ca_cert, ca_key, is_ca=True)
    leaf = new_signed_cert(CertConfig("leaf"), key.public_key(), inter, inter_key)
    verify_cert_chain(leaf, ca_cert, [inter])
    with pytest.raises(CertError):
        verify_cert_chain(leaf, ca_cert)


def test_file_helpers_modes_and_errors(tmp_path: Path, ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey]) -> None:
    cert, key = ca
    write_cert_and_key(tmp_path / "pki", "etcd/ca", cert, key)
    assert (tmp_path / "pki/etcd/ca.key").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "pki/etcd/ca.crt").stat().st_mode & 0o777 == 0o644
    assert try_load_cert(tmp_path / "pki", "etcd/ca") == cert
    assert try_load_key(tmp_path / "pki", "etcd/ca").private_numbers() == key.private_numbers()
    missing = tmp_path / "pki" / "nope.crt"
    with pytest.raises(CertError, match=f"couldn't load the certificate file {missing}: open {missing}: no such file"):
        try_load_cert(tmp_path / "pki", "nope")
    (tmp_path / "pki" / "bad.key").write_text("garbage")
    with pytest.raises(CertError, match=str(tmp_path / "pki" / "bad.key")):
        try_load_key(tmp_path / "pki", "bad")
