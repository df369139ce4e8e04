"""X.509 building blocks (kubeadm's pkiutil): self-signed CAs, CA-signed certs, CSRs, PEM I/O.

Called by pki.create (the certs phase), pki.renewal, pki.csr and kubeconfig. Certificates are built the way Go's
crypto/x509 builds kubeadm's: random serial in [1, 2^63-1), Subject O before CN (Go's RDN order, PrintableString when
the value allows it), extensions in Go's order (KeyUsage, ExtKeyUsage, BasicConstraints, SKI on CAs, AKI on signed
certs, SAN), DNS SANs deduplicated and sorted, IP SANs deduplicated in first-seen order. Every error names its file.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.name import _ASN1Type
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykubeadm import constants as c
from pykubeadm.errors import CertError
from pykubeadm.pki.keys import (
    PrivateKey,
    PublicKey,
    encode_private_key_pem,
    encode_public_key_pem,
    generate_private_key,
    parse_private_key_pem,
    parse_public_key_pem,
    signature_hash,
)
from pykubeadm.util.fs import write_file_atomic

__all__ = [
    "CLIENT_AUTH",
    "SERVER_AUTH",
    "AltNames",
    "CertConfig",
    "IPAddress",
    "alt_names_of",
    "cert_or_key_exist",
    "encode_cert_pem",
    "ext_key_usages",
    "format_go_time",
    "has_server_auth",
    "is_ca",
    "new_cert_and_key",
    "new_csr",
    "new_csr_and_key",
    "new_self_signed_ca",
    "new_signed_cert",
    "parse_certs_pem",
    "paths_for_cert_and_key",
    "san_dns_names",
    "san_ips",
    "subject_values",
    "try_load_cert",
    "try_load_cert_and_key",
    "try_load_cert_chain",
    "try_load_csr",
    "try_load_key",
    "try_load_public_key",
    "write_cert",
    "write_cert_and_key",
    "write_csr",
    "write_key",
    "write_public_key",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
SERVER_AUTH = ExtendedKeyUsageOID.SERVER_AUTH
CLIENT_AUTH = ExtendedKeyUsageOID.CLIENT_AUTH
_MAX_SERIAL = 2**63 - 1
_PRINTABLE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 '()+,-./:=?*")


@dataclass(frozen=True)
class AltNames:
    """Subject alternative names; `normalized()` applies pkiutil.RemoveDuplicateAltNames."""

    dns_names: tuple[str, ...] = ()
    ips: tuple[IPAddress, ...] = ()

    def normalized(self) -> AltNames:
        return AltNames(tuple(sorted(set(self.dns_names))), tuple(dict.fromkeys(self.ips)))

    def __bool__(self) -> bool:
        return bool(self.dns_names or self.ips)


@dataclass(frozen=True)
class CertConfig:
    """What a certificate says (pkiutil.CertConfig): subject, SANs, extended usages, validity, key algorithm."""

    common_name: str
    organization: tuple[str, ...] = ()
    alt_names: AltNames = field(default_factory=AltNames)
    usages: tuple[x509.ObjectIdentifier, ...] = ()
    not_before: datetime | None = None
    not_after: datetime | None = None
    encryption_algorithm: str = c.DEFAULT_ENCRYPTION_ALGORITHM

    def with_validity(self, not_before: datetime | None, not_after: datetime | None) -> CertConfig:
        return replace(self, not_before=not_before, not_after=not_after)


# --- building --------------------------------------------------------------------------------------------------------


def _serial() -> int:
    return secrets.randbelow(_MAX_SERIAL - 1) + 1


def _attr(oid: x509.ObjectIdentifier, value: str) -> x509.NameAttribute:
    kind = _ASN1Type.PrintableString if value and set(value) <= _PRINTABLE else _ASN1Type.UTF8String
    return x509.NameAttribute(oid, value, kind)


def _name(common_name: str, organization: Sequence[str]) -> x509.Name:
    rdns = []
    if organization:  # Go puts every O value into one multi-valued RDN, before CN
        rdns.append(x509.RelativeDistinguishedName([_attr(NameOID.ORGANIZATION_NAME, o) for o in organization]))
    if common_name:
        rdns.append(x509.RelativeDistinguishedName([_attr(NameOID.COMMON_NAME, common_name)]))
    return x509.Name(rdns)


def _sans(alt: AltNames) -> list[x509.GeneralName]:
    return [x509.DNSName(d) for d in alt.dns_names] + [x509.IPAddress(ip) for ip in alt.ips]


def _utc(t: datetime) -> datetime:
    return t.astimezone(UTC).replace(microsecond=0)


def _key_usage(cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=True,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


def new_self_signed_ca(cfg: CertConfig, key: PrivateKey, now: datetime | None = None) -> x509.Certificate:
    """A self-signed CA (pkiutil.NewSelfSignedCACert): DNSNames=[CN], CertSign, CA:TRUE without pathlen, SKI."""
    now = now or datetime.now(UTC)
    not_before = _utc(cfg.not_before or now)
    not_after = _utc(cfg.not_after or now + c.CA_CERTIFICATE_VALIDITY_PERIOD)
    name = _name(cfg.common_name, cfg.organization)
    builder = (
        x509.CertificateBuilder()
        .serial_number(_serial())
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(cfg.common_name)]), critical=False)
    )
    return builder.sign(key, signature_hash(key))


def new_signed_cert(
    cfg: CertConfig,
    public_key: PublicKey,
    ca_cert: x509.Certificate,
    ca_key: PrivateKey,
    is_ca: bool = False,
) -> x509.Certificate:
    """A certificate signed by `ca_cert`/`ca_key` (pkiutil.NewSignedCert). NotBefore defaults to the CA's NotBefore,
    NotAfter to now + 1 year; KeyUsage DigitalSignature|KeyEncipherment (+CertSign for a CA)."""
    if not cfg.common_name:
        raise CertError("must specify a CommonName")
    alt = cfg.alt_names.normalized()
    not_before = _utc(cfg.not_before) if cfg.not_before else ca_cert.not_valid_before_utc
    not_after = _utc(cfg.not_after or datetime.now(UTC) + c.CERTIFICATE_VALIDITY_PERIOD)
    builder = (
        x509.CertificateBuilder()
        .serial_number(_serial())
        .subject_name(_name(cfg.common_name, cfg.organization))
        .issuer_name(ca_cert.subject)
        .public_key(public_key)
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(_key_usage(cert_sign=is_ca), critical=True)
    )
    if cfg.usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(list(cfg.usages)), critical=False)
    builder = builder.add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    if is_ca:
        builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    try:
        ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
        )
    except x509.ExtensionNotFound:
        pass
    if alt:
        builder = builder.add_extension(x509.SubjectAlternativeName(_sans(alt)), critical=False)
    return builder.sign(ca_key, signature_hash(ca_key))


def new_cert_and_key(
    ca_cert: x509.Certificate, ca_key: PrivateKey, cfg: CertConfig, key: PrivateKey | None = None
) -> tuple[x509.Certificate, PrivateKey]:
    """A new key (cfg.encryption_algorithm, unless `key` is given) and a cert for it signed by the CA."""
    key = key or generate_private_key(cfg.encryption_algorithm)
    return new_signed_cert(cfg, key.public_key(), ca_cert, ca_key), key


def new_csr(cfg: CertConfig, key: PrivateKey) -> x509.CertificateSigningRequest:
    """A CSR with the subject and SANs of `cfg` (pkiutil.NewCSR)."""
    alt = cfg.alt_names.normalized()
    builder = x509.CertificateSigningRequestBuilder().subject_name(_name(cfg.common_name, cfg.organization))
    if alt:
        builder = builder.add_extension(x509.SubjectAlternativeName(_sans(alt)), critical=False)
    return builder.sign(key, signature_hash(key))


def new_csr_and_key(cfg: CertConfig) -> tuple[x509.CertificateSigningRequest, PrivateKey]:
    key = generate_private_key(cfg.encryption_algorithm)
    return new_csr(cfg, key), key


# --- inspection ------------------------------------------------------------------------------------------------------


def encode_cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def parse_certs_pem(data: bytes, source: str = "data") -> list[x509.Certificate]:
    """Every CERTIFICATE block of a PEM bundle (certutil.ParseCertsPEM)."""
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError as err:
        raise CertError(f"data does not contain any valid RSA or ECDSA certificates: {source}: {err}") from err
    if not certs:
        raise CertError(f"data does not contain any valid RSA or ECDSA certificates: {source}")
    return certs


def san_dns_names(cert: x509.Certificate) -> list[str]:
    try:
        return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName
        )
    except x509.ExtensionNotFound:
        return []


def san_ips(cert: x509.Certificate) -> list[IPAddress]:
    try:
        values = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.IPAddress
        )
    except x509.ExtensionNotFound:
        return []
    # an iPAddress SAN is one address; only name constraints carry networks
    return [v for v in values if isinstance(v, ipaddress.IPv4Address | ipaddress.IPv6Address)]


def ext_key_usages(cert: x509.Certificate) -> list[x509.ObjectIdentifier]:
    try:
        return list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    except x509.ExtensionNotFound:
        return []


def is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def has_server_auth(cert: x509.Certificate) -> bool:
    return SERVER_AUTH in ext_key_usages(cert)


def subject_values(name: x509.Name, oid: x509.ObjectIdentifier) -> list[str]:
    return [str(a.value) for a in name.get_attributes_for_oid(oid)]


def format_go_time(t: datetime) -> str:
    """Go's default time.Time String() for a UTC time: `2025-08-14 10:11:12 +0000 UTC`."""
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")


# --- files -----------------------------------------------------------------------------------------------------------


def paths_for_cert_and_key(pki_dir: Path, base_name: str) -> tuple[Path, Path]:
    """`<pki_dir>/<base>.crt` and `<pki_dir>/<base>.key` (pkiutil.PathsForCertAndKey)."""
    return pki_dir / f"{base_name}.crt", pki_dir / f"{base_name}.key"


def _pub_path(pki_dir: Path, base_name: str) -> Path:
    return pki_dir / f"{base_name}.pub"


def _csr_path(pki_dir: Path, base_name: str) -> Path:
    return pki_dir / f"{base_name}.csr"


def cert_or_key_exist(pki_dir: Path, base_name: str) -> bool:
    crt, key = paths_for_cert_and_key(pki_dir, base_name)
    return crt.exists() or key.exists()


def write_cert(pki_dir: Path, base_name: str, cert: x509.Certificate) -> Path:
    """`<base>.crt`, mode 0644."""
    path = paths_for_cert_and_key(pki_dir, base_name)[0]
    try:
        write_file_atomic(path, encode_cert_pem(cert), c.CERT_FILE_MODE)
    except OSError as err:
        raise CertError(f"unable to write certificate to file {path}: {err}") from err
    return path


def write_key(pki_dir: Path, base_name: str, key: PrivateKey) -> Path:
    """`<base>.key`, mode 0600."""
    path = paths_for_cert_and_key(pki_dir, base_name)[1]
    try:
        write_file_atomic(path, encode_private_key_pem(key), c.PRIVATE_FILE_MODE)
    except OSError as err:
        raise CertError(f"unable to write private key to file {path}: {err}") from err
    return path


def write_cert_and_key(pki_dir: Path, base_name: str, cert: x509.Certificate, key: PrivateKey) -> None:
    write_key(pki_dir, base_name, key)
    write_cert(pki_dir, base_name, cert)


def write_public_key(pki_dir: Path, base_name: str, public_key: PublicKey) -> Path:
    """`<base>.pub` (PKIX PEM), mode 0600 like keyutil.WriteKey."""
    path = _pub_path(pki_dir, base_name)
    try:
        write_file_atomic(path, encode_public_key_pem(public_key), c.PRIVATE_FILE_MODE)
    except OSError as err:
        raise CertError(f"unable to write public key to file {path}: {err}") from err
    return path


def write_csr(csr_dir: Path, base_name: str, csr: x509.CertificateSigningRequest) -> Path:
    """`<base>.csr` (PEM CERTIFICATE REQUEST), mode 0600, directory created 0700."""
    path = _csr_path(csr_dir, base_name)
    try:
        write_file_atomic(path, csr.public_bytes(serialization.Encoding.PEM), c.PRIVATE_FILE_MODE, c.PRIVATE_DIR_MODE)
    except OSError as err:
        raise CertError(f"unable to write CSR to file {path}: {err}") from err
    return path


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise CertError(
            f"couldn't load the {what} file {path}: open {path}: {os.strerror(err.errno or 0).lower()}"
        ) from err


def try_load_cert_chain(pki_dir: Path, base_name: str) -> tuple[x509.Certificate, list[x509.Certificate]]:
    """The certificate of `<base>.crt` and any intermediates that follow it in the file."""
    path = paths_for_cert_and_key(pki_dir, base_name)[0]
    data = _read(path, "certificate")
    try:
        certs = parse_certs_pem(data, str(path))
    except CertError as err:
        raise CertError(f"couldn't load the certificate file {path}: {err}") from err
    return certs[0], certs[1:]


def try_load_cert(pki_dir: Path, base_name: str) -> x509.Certificate:
    return try_load_cert_chain(pki_dir, base_name)[0]


def try_load_key(pki_dir: Path, base_name: str) -> PrivateKey:
    path = paths_for_cert_and_key(pki_dir, base_name)[1]
    data = _read(path, "private key")
    try:
        return parse_private_key_pem(data, str(path))
    except CertError as err:
        raise CertError(f"couldn't load the private key file {path}: {err}") from err


def try_load_cert_and_key(pki_dir: Path, base_name: str) -> tuple[x509.Certificate, PrivateKey]:
    cert = try_load_cert(pki_dir, base_name)
    key = try_load_key(pki_dir, base_name)
    return cert, key


def try_load_public_key(pki_dir: Path, base_name: str) -> PublicKey:
    path = _pub_path(pki_dir, base_name)
    return parse_public_key_pem(_read(path, "public key"), str(path))


def try_load_csr(csr_dir: Path, base_name: str) -> x509.CertificateSigningRequest:
    path = _csr_path(csr_dir, base_name)
    data = _read(path, "CSR")
    try:
        return x509.load_pem_x509_csr(data)
    except ValueError as err:
        raise CertError(f"couldn't load the CSR file {path}: {err}") from err


def alt_names_of(cert: x509.Certificate) -> AltNames:
    return AltNames(tuple(san_dns_names(cert)), tuple(san_ips(cert)))


def with_names(cfg: CertConfig, dns: Iterable[str] = (), ips: Iterable[IPAddress] = ()) -> CertConfig:
    return replace(cfg, alt_names=AltNames(cfg.alt_names.dns_names + tuple(dns), cfg.alt_names.ips + tuple(ips)))


def validity_from(start: datetime, period: timedelta) -> tuple[datetime, datetime]:
    """(start − backdate, start + period): the validity kubeadm's certlist gives every generated certificate."""
    return start - c.CERTIFICATE_BACKDATE, start + period
