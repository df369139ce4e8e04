"""Throw-away X.509 material for the etcd TLS tests: a CA, a server pair for loopback IPs, and a client pair."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(dir_: Path, base: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> tuple[Path, Path]:
    crt, k = dir_ / f"{base}.crt", dir_ / f"{base}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    k.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    k.chmod(0o600)
    return crt, k


def make_pki(dir_: Path, ips: list[str]) -> dict[str, Path]:
    """ca.crt, server.crt/key (SANs: `ips`, localhost; server+client auth), client.crt/key (CN
    kube-apiserver-etcd-client), other-ca.crt (an unrelated CA)."""
    dir_.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("etcd-ca"))
        .issuer_name(_name("etcd-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, True, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    out: dict[str, Path] = {}
    out["ca"], out["ca_key"] = _write(dir_, "ca", ca, ca_key)

    def leaf(
        cn: str, usages: list[x509.ObjectIdentifier], sans: list[x509.GeneralName]
    ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        key = ec.generate_private_key(ec.SECP256R1())
        b = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return b.sign(ca_key, hashes.SHA256()), key

    sans: list[x509.GeneralName] = [x509.DNSName("localhost")]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert, key = leaf("etcd-server", [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH], sans)
    out["server"], out["server_key"] = _write(dir_, "server", cert, key)
    cert, key = leaf("kube-apiserver-etcd-client", [ExtendedKeyUsageOID.CLIENT_AUTH], [])
    out["client"], out["client_key"] = _write(dir_, "client", cert, key)
    other_key = ec.generate_private_key(ec.SECP256R1())
    other = (
        x509.CertificateBuilder()
        .subject_name(_name("other-ca"))
        .issuer_name(_name("other-ca"))
        .public_key(other_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(other_key, hashes.SHA256())
    )
    out["other_ca"], _ = _write(dir_, "other-ca", other, other_key)
    return out
