"""CertificateSigningRequest helpers shared by csrapproving, csrsigning and csrcleaner (certificates API helpers.go).

Pure functions over the CSR as a JSON dict (`spec.request` is base64 of the PEM): parsing the PKCS#10 request,
condition lookups, and the kubelet client / serving profile checks with Kubernetes' error strings.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Any, Final

from cryptography import x509
from cryptography.x509.oid import NameOID

__all__ = [
    "KUBELET_CLIENT_SIGNER",
    "KUBELET_SERVING_SIGNER",
    "KUBE_APISERVER_CLIENT_SIGNER",
    "LEGACY_UNKNOWN_SIGNER",
    "CSRParseError",
    "get_condition",
    "has_condition",
    "is_approved",
    "is_denied",
    "is_failed",
    "parse_csr",
    "validate_kube_apiserver_client_usages",
    "validate_kubelet_client_csr",
    "validate_kubelet_serving_csr",
]

KUBE_APISERVER_CLIENT_SIGNER: Final = "kubernetes.io/kube-apiserver-client"
KUBELET_CLIENT_SIGNER: Final = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING_SIGNER: Final = "kubernetes.io/kubelet-serving"
LEGACY_UNKNOWN_SIGNER: Final = "kubernetes.io/legacy-unknown"

_KUBELET_CLIENT_USAGES = frozenset({"digital signature", "key encipherment", "client auth"})
_KUBELET_CLIENT_USAGES_NO_RSA = frozenset({"digital signature", "client auth"})
_KUBELET_SERVING_USAGES = frozenset({"digital signature", "key encipherment", "server auth"})
_KUBELET_SERVING_USAGES_NO_RSA = frozenset({"digital signature", "server auth"})


class CSRParseError(ValueError):
    """spec.request is not a PEM `CERTIFICATE REQUEST` block holding a PKCS#10 request."""


def parse_csr(csr: Mapping[str, Any]) -> x509.CertificateSigningRequest:
    """Decode `spec.request` (base64 PEM in JSON) into a cryptography CSR object."""
    raw = (csr.get("spec") or {}).get("request") or ""
    if not isinstance(raw, str | bytes | bytearray):
        raise CSRParseError("spec.request is not valid base64")
    try:
        pem = base64.b64decode(raw, validate=True) if isinstance(raw, str) else bytes(raw)
    except (binascii.Error, ValueError) as err:
        raise CSRParseError("spec.request is not valid base64") from err
    if b"-----BEGIN CERTIFICATE REQUEST-----" not in pem:
        raise CSRParseError("PEM block type must be CERTIFICATE REQUEST")
    try:
        req = x509.load_pem_x509_csr(pem)
        _ = req.subject, req.extensions  # parsed lazily: a malformed name or extension fails here, not later
    except ValueError as err:
        raise CSRParseError(f"failed to parse certificate request: {err}") from err
    return req


def _conditions(csr: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((csr.get("status") or {}).get("conditions") or [])


def get_condition(csr: Mapping[str, Any], cond_type: str) -> Mapping[str, Any] | None:
    for cond in _conditions(csr):
        if cond.get("type") == cond_type:
            return cond
    return None


def has_condition(csr: Mapping[str, Any], cond_type: str) -> bool:
    return get_condition(csr, cond_type) is not None


def is_approved(csr: Mapping[str, Any]) -> bool:
    """Approved present and no Denied (GetCertApprovalCondition)."""
    return has_condition(csr, "Approved") and not has_condition(csr, "Denied")


def is_denied(csr: Mapping[str, Any]) -> bool:
    return has_condition(csr, "Denied")


def is_failed(csr: Mapping[str, Any]) -> bool:
    """A Failed condition with status True (or empty) stops the signer."""
    cond = get_condition(csr, "Failed")
    return cond is not None and cond.get("status") in ("True", "", None)


def _organizations(req: x509.CertificateSigningRequest) -> list[str]:
    return [str(a.value) for a in req.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]


def _common_name(req: x509.CertificateSigningRequest) -> str:
    attrs = req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(attrs[0].value) if attrs else ""


def _sans(req: x509.CertificateSigningRequest) -> x509.SubjectAlternativeName | None:
    try:
        return req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None


def _has_san(req: x509.CertificateSigningRequest, kind: type[x509.GeneralName]) -> bool:
    """Whether the request asks for at least one subjectAltName of `kind` (DNSName, IPAddress, ...)."""
    sans = _sans(req)
    return sans is not None and any(isinstance(name, kind) for name in sans)


def _go_list(items: Iterable[str]) -> str:
    return "[" + " ".join(sorted(items)) + "]"


def validate_kubelet_client_csr(req: x509.CertificateSigningRequest, usages: Iterable[str]) -> str | None:
    """None if the request matches the kubelet client profile, else Kubernetes' error string (ValidateKubeletClientCSR)."""
    if _organizations(req) != ["system:nodes"]:
        return "subject organization is not system:nodes"
    if _has_san(req, x509.DNSName):
        return "DNS subjectAltNames are not allowed"
    if _has_san(req, x509.RFC822Name):
        return "Email subjectAltNames are not allowed"
    if _has_san(req, x509.IPAddress):
        return "IP subjectAltNames are not allowed"
    if _has_san(req, x509.UniformResourceIdentifier):
        return "URI subjectAltNames are not allowed"
    if not _common_name(req).startswith("system:node:"):
        return "subject common name does not begin with system:node:"
    got = frozenset(usages)
    if got not in (_KUBELET_CLIENT_USAGES, _KUBELET_CLIENT_USAGES_NO_RSA):
        return f"usages did not match {_go_list(_KUBELET_CLIENT_USAGES)}"
    return None


def validate_kubelet_serving_csr(req: x509.CertificateSigningRequest, usages: Iterable[str]) -> str | None:
    """None if the request matches the kubelet serving profile, else the error string (ValidateKubeletServingCSR)."""
    if _organizations(req) != ["system:nodes"]:
        return "subject organization is not system:nodes"
    if not _has_san(req, x509.DNSName) and not _has_san(req, x509.IPAddress):
        return "DNS or IP subjectAltName is required"
    if _has_san(req, x509.RFC822Name):
        return "Email subjectAltNames are not allowed"
    if _has_san(req, x509.UniformResourceIdentifier):
        return "URI subjectAltNames are not allowed"
    got = frozenset(usages)
    if got not in (_KUBELET_SERVING_USAGES, _KUBELET_SERVING_USAGES_NO_RSA):
        return f"usages did not match {_go_list(_KUBELET_SERVING_USAGES)}"
    if not _common_name(req).startswith("system:node:"):
        return "subject common name does not begin with system:node:"
    return None


def validate_kube_apiserver_client_usages(usages: Iterable[str]) -> str | None:
    """kube-apiserver-client: usages ⊆ {digital signature, key encipherment, client auth} and must include client auth."""
    has_client_auth = False
    for usage in usages:
        if usage == "client auth":
            has_client_auth = True
        elif usage not in ("digital signature", "key encipherment"):
            return f"invalid usage for client certificate: {usage}"
    if not has_client_auth:
        return "missing required usage for client certificate: client auth"
    return None
