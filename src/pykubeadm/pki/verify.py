"""Certificate checks with Go's crypto/x509 semantics and messages: chain verification (x509.Verify with
ExtKeyUsageAny), host name / IP verification (Certificate.VerifyHostname), and the client-certificate check of
the x509 authenticators (a chain to one of the client CAs, allowing client auth).

Called by pki.create (reuse of existing files, external CA detection), pki.renewal, and the kubelet's and the
controller-manager's / scheduler's secure servers (kubelet/server.py, controllers/app/delegatedauth.py).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from datetime import UTC, datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykubeadm.errors import CertError
from pykubeadm.pki.certs import ext_key_usages, is_ca, san_dns_names, san_ips, subject_values

__all__ = ["verify_cert_chain", "verify_client_certificate", "verify_hostname"]

_ANY_EKU = x509.ObjectIdentifier("2.5.29.37.0")


def _go_rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def verify_cert_chain(
    cert: x509.Certificate,
    root: x509.Certificate,
    intermediates: Sequence[x509.Certificate] = (),
    now: datetime | None = None,
) -> None:
    """Check that `cert` chains to `root` (through `intermediates`), each cert within its validity, like Go's
    x509.Verify with ExtKeyUsageAny; raises CertError with Go's message (`x509: certificate signed by unknown
    authority`, `x509: certificate has expired or is not yet valid: ...`)."""
    now = now or datetime.now(UTC)

    def check_time(x: x509.Certificate) -> None:
        if now < x.not_valid_before_utc:
            raise CertError(
                "x509: certificate has expired or is not yet valid: current time "
                f"{_go_rfc3339(now)} is before {_go_rfc3339(x.not_valid_before_utc)}"
            )
        if now > x.not_valid_after_utc:
            raise CertError(
                "x509: certificate has expired or is not yet valid: current time "
                f"{_go_rfc3339(now)} is after {_go_rfc3339(x.not_valid_after_utc)}"
            )

    def signed_by(child: x509.Certificate, parent: x509.Certificate) -> str | None:
        """None if `parent` signed `child`, else the reason."""
        if child.issuer != parent.subject:
            return "name"
        try:
            child.verify_directly_issued_by(parent)
        except InvalidSignature:
            if isinstance(parent.public_key(), rsa.RSAPublicKey):
                return "crypto/rsa: verification error"
            return "x509: ECDSA verification failure"
        except (ValueError, TypeError):
            parent_type = "*rsa.PublicKey" if isinstance(parent.public_key(), rsa.RSAPublicKey) else "*ecdsa.PublicKey"
            algo = "RSA" if "RSA" in child.signature_algorithm_oid._name.upper() else "ECDSA"
            return (
                f"x509: signature algorithm specifies an {algo} public key, but have public key of type {parent_type}"
            )
        return None

    def build(current: x509.Certificate, depth: int) -> str | None:
        hint = None
        reason = signed_by(current, root)
        if reason is None:
            check_time(root)
            if not is_ca(root):
                raise CertError("x509: certificate is not authorized to sign other certificates")
            return None
        if reason != "name":
            hint = reason
        if depth < 5:
            for inter in intermediates:
                if signed_by(current, inter) is None and is_ca(inter):
                    check_time(inter)
                    if build(inter, depth + 1) is None:
                        return None
        return hint or "unknown"

    check_time(cert)
    hint = build(cert, 0)
    if hint is None:
        return
    msg = "x509: certificate signed by unknown authority"
    if hint != "unknown":
        cn = ", ".join(subject_values(root.subject, NameOID.COMMON_NAME)) or str(root.subject.rfc4514_string())
        msg += f' (possibly because of "{hint}" while trying to verify candidate authority certificate "{cn}")'
    raise CertError(msg)


def _match_hostname(pattern: str, host: str) -> bool:
    pattern, host = pattern.rstrip(".").lower(), host.rstrip(".").lower()
    if not pattern or not host:
        return False
    p_labels, h_labels = pattern.split("."), host.split(".")
    if len(p_labels) != len(h_labels):
        return False
    for i, (p, h) in enumerate(zip(p_labels, h_labels, strict=True)):
        if i == 0 and p == "*":
            continue
        if p != h:
            return False
    return True


def verify_hostname(cert: x509.Certificate, host: str) -> None:
    """Go's Certificate.VerifyHostname: IPs against IP SANs, names against DNS SANs (wildcards in the first label);
    raises CertError with Go's HostnameError text."""
    candidate = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ip = ipaddress.ip_address(candidate)
    except ValueError:
        ip = None
    if ip is not None:
        ips = san_ips(cert)
        if any(ip == x for x in ips):
            return
        if not ips:
            raise CertError(f"x509: cannot validate certificate for {host} because it doesn't contain any IP SANs")
        valid = ", ".join(str(x) for x in ips)
    else:
        names = san_dns_names(cert)
        if any(_match_hostname(n, candidate) for n in names):
            return
        valid = ", ".join(names)
    if not valid:
        raise CertError(f"x509: certificate is not valid for any names, but wanted to match {host}")
    raise CertError(f"x509: certificate is valid for {valid}, not {host}")


def verify_client_certificate(ders: Sequence[bytes], roots: Sequence[x509.Certificate]) -> x509.Certificate:
    """The leaf of a client's chain (DER, leaf first, then the intermediates it sent) if it chains to one of `roots`,
    is valid now and allows client auth (Go's x509 request authenticator); else CertError with Go's message."""
    chain = [x509.load_der_x509_certificate(d) for d in ders]
    leaf, intermediates = chain[0], chain[1:]
    err: CertError | None = None
    for root in roots:
        try:
            verify_cert_chain(leaf, root, intermediates)
        except CertError as e:
            err = err or e
            continue
        usages = ext_key_usages(leaf)
        if usages and ExtendedKeyUsageOID.CLIENT_AUTH not in usages and _ANY_EKU not in usages:
            raise CertError("x509: certificate specifies an incompatible key usage")
        return leaf
    raise err or CertError("x509: certificate signed by unknown authority")
