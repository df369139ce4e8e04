"""Kubelet certificate requests: keys, PKCS#10 CSRs, CSR objects, their names, and waiting for issuance by watch.

Used by the certificate manager (client and serving certificates) and by the bootstrap storm benchmark. Values follow
client-go's `util/certificate/csr` and the kubelet's `certificate` package: ECDSA P-256 keys (`EC PRIVATE KEY`),
O=system:nodes / CN=system:node:<name>, usages by key type, signer names, `csr-` generateName (the rotating path) or
the deterministic `node-csr-<digest>` name (the blocking bootstrap path).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from pykubeadm import constants as c
from pykubeadm.kubelet.api import ApiError, KubeClient, is_transient

__all__ = [
    "CLIENT_SIGNER",
    "SERVING_SIGNER",
    "CSRDeniedError",
    "CSRTemplate",
    "build_csr_object",
    "client_template",
    "create_csr_pem",
    "digested_name",
    "generate_key",
    "key_pem",
    "request_certificate",
    "serving_template",
    "usages_for",
    "wait_for_certificate",
]

log = logging.getLogger(__name__)

#: signerName of kubelet client certificates.
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
#: signerName of kubelet serving certificates.
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
#: How long one attempt waits for a certificate (certificateWaitTimeout).
CERTIFICATE_WAIT_TIMEOUT = 15 * 60.0


class CSRDeniedError(Exception):
    """The CSR was denied or failed, or disappeared while we waited; a new attempt needs a new CSR."""


@dataclass(frozen=True)
class CSRTemplate:
    """What the certificate must say: subject and SANs (the certificate manager's template)."""

    common_name: str
    organizations: tuple[str, ...] = (c.NODES_GROUP,)
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()
    signer_name: str = CLIENT_SIGNER
    server: bool = False

    def satisfied_by(self, cert: x509.Certificate) -> bool:
        """The certificate's CN equals ours and it carries every desired org, DNS name and IP (extras are fine)."""
        cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        if not cns or cns[0].value != self.common_name:
            return False
        orgs = {a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)}
        if not set(self.organizations) <= orgs:
            return False
        try:
            san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            dns = set(san.get_values_for_type(x509.DNSName))
            ips = {str(i) for i in san.get_values_for_type(x509.IPAddress)}
        except x509.ExtensionNotFound:
            dns, ips = set(), set()
        return set(self.dns_names) <= dns and {str(ipaddress.ip_address(i)) for i in self.ip_addresses} <= ips


def client_template(node_name: str) -> CSRTemplate:
    """The kubelet client certificate: CN system:node:<name>, O system:nodes, no SANs."""
    return CSRTemplate(common_name=c.NODES_USER_PREFIX + node_name)


def serving_template(node_name: str, addresses: Sequence[dict[str, str]]) -> CSRTemplate | None:
    """The serving certificate for the Node's `status.addresses`; None while no IP is known (no CSR then)."""
    dns: set[str] = set()
    ips: set[str] = set()
    for a in addresses:
        kind, value = a.get("type", ""), a.get("address", "")
        if not value:
            continue
        if kind == "Hostname":
            try:
                ips.add(str(ipaddress.ip_address(value)))
            except ValueError:
                dns.add(value)
        elif kind in ("InternalIP", "ExternalIP"):
            ips.add(str(ipaddress.ip_address(value)))
        elif kind in ("InternalDNS", "ExternalDNS"):
            dns.add(value)
    if not ips:
        return None
    return CSRTemplate(
        common_name=c.NODES_USER_PREFIX + node_name,
        dns_names=tuple(sorted(dns)),
        ip_addresses=tuple(sorted(ips)),
        signer_name=SERVING_SIGNER,
        server=True,
    )


def generate_key() -> ec.EllipticCurvePrivateKey:
    """A fresh ECDSA P-256 key (every CSR attempt gets one)."""
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    """The key as written by keyutil: `EC PRIVATE KEY` (SEC1) for ECDSA, `RSA PRIVATE KEY` (PKCS#1) for RSA."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def usages_for(key: Any, server: bool) -> list[str]:
    """DefaultKubeletClientGetUsages / DefaultKubeletServingGetUsages: `key encipherment` only for RSA keys."""
    last = "server auth" if server else "client auth"
    if isinstance(key, rsa.RSAPrivateKey | rsa.RSAPublicKey):
        return ["digital signature", "key encipherment", last]
    return ["digital signature", last]


def create_csr_pem(key: Any, template: CSRTemplate) -> bytes:
    """A PKCS#10 request (PEM `CERTIFICATE REQUEST`) for the template, signed with `key` (ECDSA-SHA256)."""
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in template.organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, template.common_name))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs))
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in template.dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in template.ip_addresses]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def digested_name(public_key: Any, common_name: str, organizations: Sequence[str], usages: Sequence[str]) -> str:
    """The blocking bootstrap path's deterministic CSR name: `node-csr-` + base64url(SHA-512/256(...))."""
    h = hashlib.new("sha512_256")
    spki = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    for item in [spki, common_name.encode(), *(o.encode() for o in organizations), *(u.encode() for u in usages)]:
        h.update(_b64(item).encode() + b"|")
    return "node-csr-" + _b64(h.digest())


def build_csr_object(
    csr_pem: bytes, signer_name: str, usages: Sequence[str], *, name: str | None = None
) -> dict[str, Any]:
    """The certificates.k8s.io/v1 object: generateName `csr-` unless a name is given; no expirationSeconds."""
    meta: dict[str, Any] = {"name": name} if name else {"generateName": "csr-"}
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": meta,
        "spec": {
            "request": base64.b64encode(csr_pem).decode(),
            "signerName": signer_name,
            "usages": list(usages),
        },
    }


CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


@dataclass
class IssuedCertificate:
    """The outcome of one successful request: the CSR's name and the certificate chain (PEM, leaf first)."""

    csr_name: str
    cert_pem: bytes
    key: Any = field(repr=False)


def _check(obj: dict[str, Any], uid: str) -> bytes | None:
    """The certificate if the CSR is approved and issued; raises on denial, failure or a UID change."""
    if obj.get("metadata", {}).get("uid") != uid:
        raise CSRDeniedError(f"csr {obj['metadata'].get('name')!r} changed UIDs")
    status = obj.get("status") or {}
    approved = False
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Denied":
            raise CSRDeniedError(
                f"certificate signing request is denied, reason: {cond.get('reason', '')}, "
                f"message: {cond.get('message', '')}"
            )
        if cond.get("type") == "Failed":
            raise CSRDeniedError(
                f"certificate signing request failed, reason: {cond.get('reason', '')}, "
                f"message: {cond.get('message', '')}"
            )
        if cond.get("type") == "Approved":
            approved = True
    if approved and status.get("certificate"):
        return base64.b64decode(status["certificate"])
    return None


async def wait_for_certificate(
    client: KubeClient, name: str, uid: str, timeout: float = CERTIFICATE_WAIT_TIMEOUT
) -> bytes:
    """Wait by list+watch (field selector metadata.name) until the CSR is approved and issued; resumes broken watches.

    Raises CSRDeniedError on denial/failure/deletion, TimeoutError after `timeout`, ApiError/OSError only if the
    server stays unreachable until the timeout.
    """
    selector = f"metadata.name={name}"

    async def _wait() -> bytes:
        rv: str | None = None
        while True:
            try:
                if rv is None:
                    lst = await client.get(CSR_PATH, params={"fieldSelector": selector})
                    items = lst.get("items") or []
                    if not items:  # gone (deleted, or the API server lost its state): a new CSR is needed
                        raise CSRDeniedError(f"csr {name!r} no longer exists")
                    for item in items:
                        cert = _check(item, uid)
                        if cert:
                            return cert
                    rv = lst.get("metadata", {}).get("resourceVersion") or "0"
                async for etype, obj in client.watch(CSR_PATH, field_selector=selector, resource_version=rv):
                    if etype == "ERROR":
                        rv = None  # e.g. 410 Gone: relist
                        break
                    if etype == "BOOKMARK":
                        rv = obj.get("metadata", {}).get("resourceVersion", rv)
                        continue
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if etype == "DELETED":
                        raise CSRDeniedError(f"csr {name!r} was deleted")
                    cert = _check(obj, uid)
                    if cert:
                        return cert
            except CSRDeniedError:
                raise
            except ApiError as e:
                if e.status == 410:
                    rv = None
                    continue
                log.info("waiting for certificate of csr %r: %s; retrying", name, e)
                await asyncio.sleep(1.0)
            except Exception as e:
                if not is_transient(e):
                    raise
                log.info("waiting for certificate of csr %r: %s: %s; retrying", name, type(e).__name__, e)
                rv = None
                await asyncio.sleep(1.0)

    return await asyncio.wait_for(_wait(), timeout)


async def request_certificate(
    client: KubeClient,
    template: CSRTemplate,
    *,
    key: Any = None,
    name: str | None = None,
    timeout: float = CERTIFICATE_WAIT_TIMEOUT,
) -> IssuedCertificate:
    """Create a CSR for `template` (fresh ECDSA P-256 key unless given) and wait for its certificate."""
    key = key if key is not None else generate_key()
    usages = usages_for(key, template.server)
    pem = create_csr_pem(key, template)
    obj = build_csr_object(pem, template.signer_name, usages, name=name)
    try:
        created = await client.post(CSR_PATH, obj)
    except ApiError as e:
        if not (e.status == 409 and name):
            raise
        created = await client.get(f"{CSR_PATH}/{name}")
        _ensure_compatible(created, template, key)
    csr_name = created["metadata"]["name"]
    log.info("created certificate signing request %r (signer %s)", csr_name, template.signer_name)
    cert = await wait_for_certificate(client, csr_name, created["metadata"]["uid"], timeout)
    return IssuedCertificate(csr_name=csr_name, cert_pem=cert, key=key)


def _ensure_compatible(existing: dict[str, Any], template: CSRTemplate, key: Any) -> None:
    """An existing CSR of the same name may be reused only if it is ours (same subject and public key)."""
    req = x509.load_pem_x509_csr(base64.b64decode(existing["spec"]["request"]))
    ours = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    theirs = req.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    cns = req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if ours != theirs or not cns or cns[0].value != template.common_name or not req.is_signature_valid:
        raise CSRDeniedError(f"retrieved csr {existing['metadata']['name']!r} is not compatible")
    signer = existing["spec"].get("signerName")
    if signer and signer != template.signer_name:
        raise CSRDeniedError(f"retrieved csr {existing['metadata']['name']!r} has signer {signer!r}")
