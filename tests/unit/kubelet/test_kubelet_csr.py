"""CSR construction and naming as the kubelet does it (subject, usages, signer, generateName, node-csr-<digest>)."""

from __future__ import annotations

import base64
import hashlib
import subprocess

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from pykubeadm.kubelet import csr


def _b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def test_client_csr_subject_key_and_no_sans():
    key = csr.generate_key()
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    pem = csr.create_csr_pem(key, csr.client_template("node-1"))
    assert pem.startswith(b"-----BEGIN CERTIFICATE REQUEST-----")
    req = x509.load_pem_x509_csr(pem)
    assert req.is_signature_valid
    assert req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:node-1"
    assert [a.value for a in req.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:nodes"]
    assert len(req.extensions) == 0  # no SANs in a client CSR


def test_csr_verifies_with_openssl(tmp_path):
    pem = csr.create_csr_pem(csr.generate_key(), csr.client_template("n2"))
    (tmp_path / "r.csr").write_bytes(pem)
    out = subprocess.run(
        ["openssl", "req", "-in", str(tmp_path / "r.csr"), "-noout", "-verify", "-subject"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "system:node:n2" in out.stdout and "system:nodes" in out.stdout
    assert "verify OK" in (out.stdout + out.stderr)


def test_usages_by_key_type():
    ec_key = csr.generate_key()
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert csr.usages_for(ec_key, server=False) == ["digital signature", "client auth"]
    assert csr.usages_for(rsa_key, server=False) == ["digital signature", "key encipherment", "client auth"]
    assert csr.usages_for(ec_key, server=True) == ["digital signature", "server auth"]


def test_csr_object_uses_generate_name_and_kubelet_client_signer():
    pem = csr.create_csr_pem(csr.generate_key(), csr.client_template("n"))
    obj = csr.build_csr_object(pem, csr.CLIENT_SIGNER, ["digital signature", "client auth"])
    assert obj["apiVersion"] == "certificates.k8s.io/v1" and obj["kind"] == "CertificateSigningRequest"
    assert obj["metadata"] == {"generateName": "csr-"}
    assert obj["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
    assert base64.b64decode(obj["spec"]["request"]) == pem
    assert "expirationSeconds" not in obj["spec"]
    named = csr.build_csr_object(pem, csr.CLIENT_SIGNER, ["client auth"], name="node-csr-x")
    assert named["metadata"] == {"name": "node-csr-x"}


def test_digested_name_matches_independent_computation():
    key = csr.generate_key()
    usages = ["digital signature", "client auth"]
    name = csr.digested_name(key.public_key(), "system:node:a", ["system:nodes"], usages)
    spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    h = hashlib.new("sha512_256")
    for item in (spki, b"system:node:a", b"system:nodes", *(u.encode() for u in usages)):
        h.update(_b64(item).encode() + b"|")
    assert name == "node-csr-" + _b64(h.digest())
    assert len(name) == 52
    # deterministic for the same inputs, different for another key or node
    assert name == csr.digested_name(key.public_key(), "system:node:a", ["system:nodes"], usages)
    assert name != csr.digested_name(csr.generate_key().public_key(), "system:node:a", ["system:nodes"], usages)
    assert name != csr.digested_name(key.public_key(), "system:node:b", ["system:nodes"], usages)


def test_serving_template_from_node_addresses():
    assert csr.serving_template("n", [{"type": "Hostname", "address": "n"}]) is None  # no IP yet → no CSR
    tpl = csr.serving_template(
        "n",
        [
            {"type": "InternalIP", "address": "127.0.10.2"},
            {"type": "Hostname", "address": "node-b"},
            {"type": "ExternalDNS", "address": "a.example"},
            {"type": "InternalIP", "address": "127.0.10.2"},
            {"type": "InternalIP", "address": ""},
        ],
    )
    assert tpl is not None
    assert tpl.signer_name == "kubernetes.io/kubelet-serving" and tpl.server
    assert tpl.dns_names == ("a.example", "node-b")
    assert tpl.ip_addresses == ("127.0.10.2",)
    req = x509.load_pem_x509_csr(csr.create_csr_pem(csr.generate_key(), tpl))
    san = req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(i) for i in san.get_values_for_type(x509.IPAddress)} == {"127.0.10.2"}


def test_template_satisfaction(tiny_ca):
    key = csr.generate_key()
    cert = x509.load_pem_x509_certificate(tiny_ca.sign_csr(csr.create_csr_pem(key, csr.client_template("n"))))
    assert csr.client_template("n").satisfied_by(cert)
    assert not csr.client_template("other").satisfied_by(cert)


def test_check_condition_handling():
    ok = {
        "metadata": {"uid": "u", "name": "c"},
        "status": {"conditions": [{"type": "Approved"}], "certificate": base64.b64encode(b"PEM").decode()},
    }
    assert csr._check(ok, "u") == b"PEM"
    pending = {"metadata": {"uid": "u", "name": "c"}, "status": {"conditions": [{"type": "Approved"}]}}
    assert csr._check(pending, "u") is None
    denied = {
        "metadata": {"uid": "u", "name": "c"},
        "status": {"conditions": [{"type": "Denied", "reason": "Nope", "message": "no"}]},
    }
    import pytest

    with pytest.raises(csr.CSRDeniedError, match="denied, reason: Nope"):
        csr._check(denied, "u")
    with pytest.raises(csr.CSRDeniedError, match="changed UIDs"):
        csr._check(ok, "other")
