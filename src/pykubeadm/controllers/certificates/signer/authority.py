"""The CSR signing authority of csrsigning: a CA loaded (and re-loaded on change) from files, and Kubernetes' signing policy.

`CertificateAuthority.sign` issues a leaf for a PKCS#10 request the way kube-controller-manager's authority package does
(PermissiveSigningPolicy): subject, SANs and public key from the request, every requested extension dropped, KeyUsage and
ExtKeyUsage from `spec.usages`, BasicConstraints CA=false, NotBefore = now − 5 min, NotAfter = now + ttl (− 5 min when
ttl ≥ 8 h) clamped to the CA's NotAfter, a random 128-bit serial. `CAFiles` reloads the pair whenever the file bytes
change (the files are read on every sign, as the real controller does); files that no longer read or parse leave the last
good pair in use, as kube's dynamic cert/key loader does.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, ObjectIdentifier

__all__ = ["BACKDATE", "SHORT_TTL", "CAFiles", "CertificateAuthority", "SigningError", "ttl_for"]

#: NotBefore backdate of issued certificates.
BACKDATE = timedelta(minutes=5)
#: Below this lifetime NotAfter is not shortened by the backdate.
SHORT_TTL = timedelta(hours=8)
#: The shortest lifetime a CSR may ask for via spec.expirationSeconds.
MIN_TTL = timedelta(minutes=10)

log = logging.getLogger(__name__)

# Go's x509.ExtKeyUsage enum order (issued EKUs are sorted by it).
_EKU_ORDER: list[tuple[str, ObjectIdentifier]] = [
    ("any", ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE),
    ("server auth", ExtendedKeyUsageOID.SERVER_AUTH),
    ("client auth", ExtendedKeyUsageOID.CLIENT_AUTH),
    ("code signing", ExtendedKeyUsageOID.CODE_SIGNING),
    ("email protection", ExtendedKeyUsageOID.EMAIL_PROTECTION),
    ("ipsec end system", ObjectIdentifier("1.3.6.1.5.5.7.3.5")),
    ("ipsec tunnel", ObjectIdentifier("1.3.6.1.5.5.7.3.6")),
    ("ipsec user", ObjectIdentifier("1.3.6.1.5.5.7.3.7")),
    ("timestamping", ExtendedKeyUsageOID.TIME_STAMPING),
    ("ocsp signing", ExtendedKeyUsageOID.OCSP_SIGNING),
    ("microsoft sgc", ObjectIdentifier("1.3.6.1.4.1.311.10.3.3")),
    ("netscape sgc", ObjectIdentifier("2.16.840.1.113730.4.1")),
]
_EKU_ALIASES = {"s/mime": "email protection"}
_KEY_USAGE_BITS = {
    "signing": "digital_signature",
    "digital signature": "digital_signature",
    "content commitment": "content_commitment",
    "key encipherment": "key_encipherment",
    "key agreement": "key_agreement",
    "data encipherment": "data_encipherment",
    "cert sign": "key_cert_sign",
    "crl sign": "crl_sign",
    "encipher only": "encipher_only",
    "decipher only": "decipher_only",
}


class SigningError(Exception):
    """The CA cannot sign (expired, unreadable) or the request cannot be signed; the controller retries."""


def ttl_for(expiration_seconds: int | None, cert_ttl: timedelta) -> timedelta:
    """Lifetime of an issued cert: --cluster-signing-duration, or spec.expirationSeconds clamped to [10 min, that]."""
    if expiration_seconds is None:
        return cert_ttl
    requested = timedelta(seconds=expiration_seconds)
    return max(MIN_TTL, min(requested, cert_ttl))


def _key_usages(usages: Iterable[str]) -> tuple[x509.KeyUsage | None, list[ObjectIdentifier]]:
    bits = dict.fromkeys(
        (
            "digital_signature",
            "content_commitment",
            "key_encipherment",
            "data_encipherment",
            "key_agreement",
            "key_cert_sign",
            "crl_sign",
            "encipher_only",
            "decipher_only",
        ),
        False,
    )
    ekus: set[str] = set()
    unknown: list[str] = []
    eku_names = {name for name, _ in _EKU_ORDER}
    for usage in usages:
        if usage in _KEY_USAGE_BITS:
            bits[_KEY_USAGE_BITS[usage]] = True
        elif _EKU_ALIASES.get(usage, usage) in eku_names:
            ekus.add(_EKU_ALIASES.get(usage, usage))
        else:
            unknown.append(usage)
    if unknown:
        raise SigningError(f"unrecognized usage values: {unknown}")
    if (bits["encipher_only"] or bits["decipher_only"]) and not bits["key_agreement"]:
        bits["key_agreement"] = True  # cryptography requires it; Go would emit the bit set anyway
    key_usage = x509.KeyUsage(**bits) if any(bits.values()) else None
    return key_usage, [oid for name, oid in _EKU_ORDER if name in ekus]


def _hash_for(key: object) -> hashes.SHA256 | hashes.SHA384 | hashes.SHA512 | None:
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return None
    if isinstance(key, ec.EllipticCurvePrivateKey):
        if key.curve.key_size > 384:
            return hashes.SHA512()
        if key.curve.key_size > 256:
            return hashes.SHA384()
    return hashes.SHA256()


@dataclass(frozen=True)
class CertificateAuthority:
    """A CA certificate and its private key."""

    certificate: x509.Certificate
    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey

    def sign(
        self,
        request: x509.CertificateSigningRequest,
        usages: Iterable[str],
        ttl: timedelta,
        now: datetime | None = None,
    ) -> x509.Certificate:
        """Issue a leaf certificate for `request` with Kubernetes' permissive signing policy."""
        now = now or datetime.now(UTC)
        if not request.is_signature_valid:
            raise SigningError("the certificate request signature is invalid")
        key_usage, ekus = _key_usages(usages)
        ca_not_after = self.certificate.not_valid_after_utc
        not_before = now - BACKDATE
        not_after = now + ttl if ttl < SHORT_TTL else now + ttl - BACKDATE
        if not_after >= ca_not_after:
            not_after = ca_not_after
        if not_before >= ca_not_after:
            raise SigningError(f"the signer has expired: NotAfter={ca_not_after}")
        if now >= ca_not_after:
            raise SigningError(f"refusing to sign a certificate that expired in the past: NotAfter={ca_not_after}")

        builder = (
            x509.CertificateBuilder()
            .subject_name(request.subject)
            .issuer_name(self.certificate.subject)
            .public_key(request.public_key())
            .serial_number(secrets.randbits(128) or 1)
            .not_valid_before(not_before)
            .not_valid_after(not_after)
        )
        if key_usage is not None:
            builder = builder.add_extension(key_usage, critical=True)
        if ekus:
            builder = builder.add_extension(x509.ExtendedKeyUsage(ekus), critical=False)
        builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        try:
            ski = self.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
            builder = builder.add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
            )
        except x509.ExtensionNotFound:
            pass
        names = _copied_sans(request)
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=len(request.subject) == 0)
        return builder.sign(self.key, _hash_for(self.key))


def _copied_sans(request: x509.CertificateSigningRequest) -> list[x509.GeneralName]:
    """DNS, IP, email and URI SANs of the request (what Go's template copies), in that order."""
    try:
        sans = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    out: list[x509.GeneralName] = []
    for kind in (x509.DNSName, x509.IPAddress, x509.RFC822Name, x509.UniformResourceIdentifier):
        out.extend(name for name in sans if isinstance(name, kind))
    return out


class CAFiles:
    """The CA pair from --cluster-signing-cert-file/--cluster-signing-key-file, re-parsed when the bytes change."""

    def __init__(self, cert_file: Path, key_file: Path):
        self.cert_file = cert_file
        self.key_file = key_file
        self._lock = threading.Lock()
        self._raw: tuple[bytes, bytes] | None = None
        self._ca: CertificateAuthority | None = None
        self._failed = ""

    def current(self) -> CertificateAuthority:
        """The pair as the files hold it now; once a pair has loaded, files that no longer read or parse (removed,
        replaced by something unparsable) keep the last good pair in use, as kube's dynamic cert/key loader does
        (it logs the error and serves the previous content). Raises SigningError only before a first good load."""
        try:
            raw = (self.cert_file.read_bytes(), self.key_file.read_bytes())
        except OSError as err:
            return self._keep_previous(SigningError(f"error reading CA cert file {err.filename}: {err.strerror}"))
        with self._lock:
            if raw != self._raw or self._ca is None:
                try:
                    self._ca = _parse_pair(raw[0], raw[1], self.cert_file, self.key_file)
                except SigningError as err:
                    return self._keep_previous(err)
                self._raw = raw
            return self._ca

    def _keep_previous(self, err: SigningError) -> CertificateAuthority:
        if self._ca is None:
            raise err
        if self._failed != str(err):  # once per change of the files, not once per CSR
            self._failed = str(err)
            log.error('"Loading CA cert/key pair failed, keeping the previous one" err="%s"', err)
        return self._ca


def _parse_pair(cert_pem: bytes, key_pem: bytes, cert_file: Path, key_file: Path) -> CertificateAuthority:
    try:
        certs = x509.load_pem_x509_certificates(cert_pem)
    except ValueError as err:
        raise SigningError(f"error reading CA cert file {cert_file}: {err}") from err
    if len(certs) != 1:
        raise SigningError(f"error reading CA cert file {cert_file}: expected 1 certificate, found {len(certs)}")
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError) as err:  # keyutil.ParsePrivateKeyPEM's message
        raise SigningError(
            f"error reading CA key file {key_file}: data does not contain a valid RSA or ECDSA private key"
        ) from err
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey):
        raise SigningError(f"error reading CA key file {key_file}: key does not implement crypto.Signer")
    return CertificateAuthority(certs[0], key)
