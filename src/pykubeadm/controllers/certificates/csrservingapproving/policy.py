"""Whether a `kubernetes.io/kubelet-serving` CSR asks only for what its requesting node owns (pure functions).

Checks, in order; the first that fails is the answer (and what the Event names):
requester `system:node:<name>` in group `system:nodes` → subject exactly `O=system:nodes, CN=system:node:<name>` →
usages exactly {digital signature, server auth} or {digital signature, key encipherment, server auth} (kube's two
kubelet serving profiles) → public key ECDSA P-256/P-384 or RSA ≥ 2048 bits → at least one SAN, no email or URI SANs,
every DNS SAN among the Node's Hostname/InternalDNS/ExternalDNS addresses and every IP SAN among its
InternalIP/ExternalIP (or IP Hostname) addresses.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from pykubeadm import constants as c

__all__ = ["ALLOWED_USAGES", "ServingCheck", "check_serving_csr", "node_name_of", "node_names_and_ips"]

#: kube's kubelet serving profiles (ValidateKubeletServingCSR accepts both, compared as sets)
ALLOWED_USAGES = (
    frozenset({"digital signature", "server auth"}),
    frozenset({"digital signature", "key encipherment", "server auth"}),
)
_ALLOWED_CURVES = (ec.SECP256R1, ec.SECP384R1)
_MIN_RSA_BITS = 2048
_DNS_TYPES = ("Hostname", "InternalDNS", "ExternalDNS")
_IP_TYPES = ("InternalIP", "ExternalIP", "Hostname")


@dataclass(frozen=True)
class ServingCheck:
    """The verdict: `problem` is None when the CSR may be approved; `field` names what failed."""

    node: str
    field: str = ""
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def node_name_of(username: str) -> str:
    """`worker-1` for `system:node:worker-1`, else ""."""
    return username.removeprefix(c.NODES_USER_PREFIX) if username.startswith(c.NODES_USER_PREFIX) else ""


def node_names_and_ips(node: Mapping[str, Any]) -> tuple[set[str], set[ipaddress.IPv4Address | ipaddress.IPv6Address]]:
    """The DNS names and IPs a Node's `status.addresses` give it."""
    dns: set[str] = set()
    ips: set[ipaddress.IPv4Address | ipaddress.IPv6Address] = set()
    for addr in (node.get("status") or {}).get("addresses") or []:
        kind, value = addr.get("type", ""), addr.get("address", "")
        if not value:
            continue
        try:
            ip = ipaddress.ip_address(value)
        except ValueError:
            if kind in _DNS_TYPES:
                dns.add(value.lower())
            continue
        if kind in _IP_TYPES:
            ips.add(ip)
    return dns, ips


def _subject_problem(req: x509.CertificateSigningRequest, username: str) -> str | None:
    attrs = [(a.oid, a.value) for a in req.subject]
    want = sorted(
        [(NameOID.ORGANIZATION_NAME.dotted_string, c.NODES_GROUP), (NameOID.COMMON_NAME.dotted_string, username)]
    )
    got = sorted((oid.dotted_string, str(value)) for oid, value in attrs)
    if got != want:
        return f'subject "{req.subject.rfc4514_string()}" is not exactly O={c.NODES_GROUP}, CN={username}'
    return None


def _key_problem(req: x509.CertificateSigningRequest) -> str | None:
    key = req.public_key()
    if isinstance(key, ec.EllipticCurvePublicKey):
        if isinstance(key.curve, _ALLOWED_CURVES):
            return None
        return f"ECDSA curve {key.curve.name} is not allowed (P-256 or P-384)"
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size >= _MIN_RSA_BITS:
            return None
        return f"RSA key of {key.key_size} bits is too small (at least {_MIN_RSA_BITS})"
    return f"{type(key).__name__.removeprefix('_')} keys are not allowed (ECDSA P-256/P-384 or RSA >= 2048 bits)"


def _san_problem(
    req: x509.CertificateSigningRequest, node_name: str, node: Mapping[str, Any]
) -> tuple[str, str] | None:
    try:
        sans = list(req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value)
    except x509.ExtensionNotFound:
        sans = []
    if not sans:
        return "subjectAltName", "at least one DNS or IP subjectAltName is required"
    dns, ips = node_names_and_ips(node)
    for san in sans:
        if isinstance(san, x509.DNSName):
            if san.value.lower() not in dns:
                return f"DNS:{san.value}", f"DNS subjectAltName {san.value} is not an address of Node {node_name}"
        elif isinstance(san, x509.IPAddress):
            if san.value not in ips:
                return f"IP:{san.value}", f"IP subjectAltName {san.value} is not an address of Node {node_name}"
        elif isinstance(san, x509.RFC822Name):
            return f"email:{san.value}", f"email subjectAltName {san.value} is not allowed"
        elif isinstance(san, x509.UniformResourceIdentifier):
            return f"URI:{san.value}", f"URI subjectAltName {san.value} is not allowed"
        else:
            return "subjectAltName", f"subjectAltName {san} is not allowed"
    return None


def check_serving_csr(
    spec: Mapping[str, Any], req: x509.CertificateSigningRequest, node: Mapping[str, Any] | None
) -> ServingCheck:
    """Judge a kubelet-serving CSR (`spec` of the object, its parsed request, the requester's Node or None)."""
    username = str(spec.get("username") or "")
    name = node_name_of(username)
    if not name:
        return ServingCheck("", "spec.username", f'requester "{username}" is not a node (system:node:<name>)')
    if c.NODES_GROUP not in (spec.get("groups") or []):
        return ServingCheck(name, "spec.groups", f'requester "{username}" is not in group {c.NODES_GROUP}')
    problem = _subject_problem(req, username)
    if problem:
        return ServingCheck(name, "subject", problem)
    usages = frozenset(spec.get("usages") or [])
    if usages not in ALLOWED_USAGES:
        return ServingCheck(
            name,
            "spec.usages",
            f"usages [{' '.join(sorted(usages))}] are not [digital signature server auth] "
            "or [digital signature key encipherment server auth]",
        )
    problem = _key_problem(req)
    if problem:
        return ServingCheck(name, "publicKey", problem)
    if node is None:
        return ServingCheck(name, "node", f"Node {name} not found")
    san = _san_problem(req, name, node)
    if san:
        return ServingCheck(name, san[0], san[1])
    return ServingCheck(name)
