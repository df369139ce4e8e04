"""Real keys, CAs and CSRs for the controller unit tests (cryptography; nothing mocked)."""

from __future__ import annotations

import base64
import ipaddress
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from pykubeadm.controllers.certificates.signer.authority import CertificateAuthority

CLIENT_KUBELET = "kubernetes.io/kube-apiserver-client-kubelet"


def make_ca(days: float = 3650, key: Any = None) -> CertificateAuthority:
    key = key or rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.now(UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, True, False, False, True, False, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertificateAuthority(cert, key)


def make_request(
    cn: str = "system:node:worker-1",
    orgs: tuple[str, ...] = ("system:nodes",),
    dns: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
    emails: tuple[str, ...] = (),
    uris: tuple[str, ...] = (),
    key: Any = None,
) -> tuple[x509.CertificateSigningRequest, bytes]:
    key = key or ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs))
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    sans += [x509.RFC822Name(e) for e in emails]
    sans += [x509.UniformResourceIdentifier(u) for u in uris]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    req = builder.sign(key, hashes.SHA256())
    return req, req.public_bytes(serialization.Encoding.PEM)


def csr_object(
    pem: bytes,
    *,
    signer: str = CLIENT_KUBELET,
    usages: tuple[str, ...] = ("digital signature", "client auth"),
    username: str = "system:bootstrap:abcdef",
    groups: tuple[str, ...] = (
        "system:bootstrappers",
        "system:bootstrappers:kubeadm:default-node-token",
        "system:authenticated",
    ),
    conditions: list[dict[str, Any]] | None = None,
    certificate: str | None = None,
    expiration_seconds: int | None = None,
    name: str = "csr-abcde",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "request": base64.b64encode(pem).decode(),
        "signerName": signer,
        "usages": list(usages),
        "username": username,
        "groups": list(groups),
    }
    if expiration_seconds is not None:
        spec["expirationSeconds"] = expiration_seconds
    status: dict[str, Any] = {"conditions": conditions or []}
    if certificate:
        status["certificate"] = certificate
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name, "creationTimestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")},
        "spec": spec,
        "status": status,
    }
