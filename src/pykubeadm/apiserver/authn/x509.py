"""Client-certificate authenticator (--client-ca-file): a chain verified to the CA bundle, CN → user, O → groups.

Also provides `verify_client_chain`, which the front-proxy (request header) authenticator reuses with its own CA.
Chain building and signature checks are `cryptography.x509.verification`'s; we add Go's extended-key-usage rule
(a certificate with an EKU extension must allow client auth or any usage).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from cryptography import x509
from cryptography.x509 import verification
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykubeadm.apiserver.authn.user import AuthenticationError, AuthRequest, UserInfo

__all__ = ["CertificateError", "X509Authenticator", "load_ca_bundle", "user_from_certificate", "verify_client_chain"]

_ANY_EKU = x509.ObjectIdentifier("2.5.29.37.0")


class CertificateError(AuthenticationError):
    """The client certificate does not verify against the trusted CA bundle."""


def load_ca_bundle(path: str | Path) -> list[x509.Certificate]:
    data = Path(path).read_bytes()
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError as err:
        raise ValueError(f"error reading {path}: data does not contain any valid RSA or ECDSA certificates") from err
    return certs


def _client_eku_ok(cert: x509.Certificate) -> bool:
    try:
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return True
    return ExtendedKeyUsageOID.CLIENT_AUTH in eku or _ANY_EKU in eku


#: Entries of the verification caches: every client certificate of a 5000-node cluster (kubelets, their renewals,
#: controllers) with room to spare. A least-recently-used cache smaller than the set of clients that take turns (5000
#: Lease renewers, one request each every 10 s) misses on every request: each one then verified its chain again.
CACHE_SIZE = 16384


class _VerifyCache:
    """Results of recent chain verifications: successes until the earliest NotAfter, failures for a few seconds."""

    _FAILURE_TTL = 5.0

    def __init__(self, size: int = CACHE_SIZE):
        self._size = size
        self._items: OrderedDict[tuple, tuple[float, float, list[x509.Certificate] | str]] = OrderedDict()

    def get(self, key: tuple) -> list[x509.Certificate] | str | None:
        hit = self._items.get(key)
        if hit is None:
            return None
        not_before, until, result = hit
        if not not_before <= time.time() < until:
            del self._items[key]
            return None
        self._items.move_to_end(key)
        return result

    def put(self, key: tuple, result: list[x509.Certificate] | str) -> None:
        now = time.time()
        if isinstance(result, str):
            not_before, until = now, now + self._FAILURE_TTL
        else:
            not_before = max(c.not_valid_before_utc for c in result).timestamp()
            until = min(c.not_valid_after_utc for c in result).timestamp()
        self._items[key] = (not_before, until, result)
        if len(self._items) > self._size:
            self._items.popitem(last=False)


_cache = _VerifyCache()


def verify_client_chain(
    chain: Sequence[x509.Certificate], roots: Sequence[x509.Certificate], now: datetime | None = None
) -> list[x509.Certificate]:
    """Verify `chain` (leaf first, then intermediates) against `roots` for client auth; the verified path or raise.

    Results are cached per (roots, chain) when verifying at the current time."""
    if now is not None or not chain or not roots:
        return _verify(chain, roots, now)
    key = (tuple(roots), tuple(chain))
    cached = _cache.get(key)
    if cached is None:
        try:
            cached = _verify(chain, roots, None)
        except CertificateError as err:
            cached = str(err)
        _cache.put(key, cached)
    if isinstance(cached, str):
        raise CertificateError(cached)
    return list(cached)


def _verify(
    chain: Sequence[x509.Certificate], roots: Sequence[x509.Certificate], now: datetime | None
) -> list[x509.Certificate]:
    if not chain:
        raise CertificateError("no client certificate")
    if not roots:
        raise CertificateError("x509: certificate signed by unknown authority")
    ca_policy = verification.ExtensionPolicy.permit_all().require_present(
        x509.BasicConstraints, verification.Criticality.AGNOSTIC, None
    )
    builder = (
        verification.PolicyBuilder()
        .store(verification.Store(list(roots)))
        .time(now or datetime.now(UTC))
        .extension_policies(ca_policy=ca_policy, ee_policy=verification.ExtensionPolicy.permit_all())
    )
    try:
        verified = builder.build_client_verifier().verify(chain[0], list(chain[1:]))
    except verification.VerificationError as err:
        raise CertificateError(f"verifying certificate {_describe(chain[0])} failed: {err}") from None
    path = list(verified.chain)
    if not all(_client_eku_ok(c) for c in path):
        raise CertificateError(
            f"verifying certificate {_describe(chain[0])} failed: x509: certificate specifies an incompatible key usage"
        )
    return path


def _describe(cert: x509.Certificate) -> str:
    return f"SN={cert.serial_number}, SKID={_skid(cert)}, AKID={_akid(cert)}"


def _skid(cert: x509.Certificate) -> str:
    try:
        return cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest.hex(":").upper()
    except x509.ExtensionNotFound:
        return ""


def _akid(cert: x509.Certificate) -> str:
    try:
        ident = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier
    except x509.ExtensionNotFound:
        return ""
    return ident.hex(":").upper() if ident else ""


def user_from_certificate(cert: x509.Certificate) -> UserInfo | None:
    """CN → user name, every O (in order) → groups; None when the CN is empty."""
    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    cn = str(cns[0].value) if cns else ""
    if not cn:
        return None
    groups = tuple(str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))
    return UserInfo(name=cn, groups=groups)


class X509Authenticator:
    """An Authenticator: the request's verified client certificate → user; no certificate → no opinion."""

    def __init__(self, roots: Sequence[x509.Certificate]):
        self._roots = list(roots)

    @classmethod
    def from_file(cls, path: str | Path) -> X509Authenticator:
        return cls(load_ca_bundle(path))

    async def __call__(self, req: AuthRequest) -> UserInfo | None:
        if not req.peer_chain:
            return None
        verify_client_chain(req.peer_chain, self._roots)
        return user_from_certificate(req.peer_chain[0])
