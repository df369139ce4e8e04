"""CSR admission plugins: CertificateApproval (/approval needs `approve` on the signer), CertificateSigning (/status
changes need `sign` on the signer) and CertificateSubjectRestriction (no system:masters via kube-apiserver-client).

Validating plugins; they ask the request's authorizer, as kube-apiserver's do (fact sheet controlplane §4.5–4.6).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation, forbidden
from pykubeadm.apiserver.authz.attributes import Attributes, Authorizer, Decision

__all__ = ["CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction"]

_GROUP = "certificates.k8s.io"
_CSRS = "certificatesigningrequests"


def _is_csr(attrs: AdmissionAttributes, subresource: str) -> bool:
    return attrs.group == _GROUP and attrs.resource == _CSRS and attrs.subresource == subresource


def _signer(obj: dict[str, Any] | None) -> str:
    return str(((obj or {}).get("spec") or {}).get("signerName", ""))


async def _may(authorizer: Authorizer, attrs: AdmissionAttributes, verb: str, signer: str) -> bool:
    """Ask for `verb` on signers/<signer>, then on signers/<domain>/* (RBAC has no globbing; the literal name)."""
    names = [signer]
    if "/" in signer:
        names.append(signer.split("/", 1)[0] + "/*")
    for name in names:
        decision, _ = await authorizer(
            Attributes(
                user=attrs.user,
                verb=verb,
                resource_request=True,
                api_group=_GROUP,
                api_version="*",
                resource="signers",
                name=name,
            )
        )
        if decision is Decision.ALLOW:
            return True
    return False


class CertificateApproval:
    name = "CertificateApproval"

    def __init__(self, authorizer: Authorizer):
        self._authorizer = authorizer

    def handles(self, op: Operation) -> bool:
        return op is Operation.UPDATE

    async def validate(self, attrs: AdmissionAttributes) -> None:
        if not _is_csr(attrs, "approval"):
            return
        signer = _signer(attrs.old_obj) or _signer(attrs.obj)
        if not await _may(self._authorizer, attrs, "approve", signer):
            raise forbidden(attrs, f'user not permitted to approve requests with signerName "{signer}"')


class CertificateSigning:
    name = "CertificateSigning"

    def __init__(self, authorizer: Authorizer):
        self._authorizer = authorizer

    def handles(self, op: Operation) -> bool:
        return op is Operation.UPDATE

    async def validate(self, attrs: AdmissionAttributes) -> None:
        if not _is_csr(attrs, "status"):
            return
        old_status = (attrs.old_obj or {}).get("status") or {}
        new_status = (attrs.obj or {}).get("status") or {}
        if old_status.get("certificate") == new_status.get("certificate") and (old_status.get("conditions") or []) == (
            new_status.get("conditions") or []
        ):
            return
        signer = _signer(attrs.old_obj) or _signer(attrs.obj)
        if not await _may(self._authorizer, attrs, "sign", signer):
            raise forbidden(attrs, f'user not permitted to sign requests with signerName "{signer}"')


class CertificateSubjectRestriction:
    name = "CertificateSubjectRestriction"

    def handles(self, op: Operation) -> bool:
        return op is Operation.CREATE

    async def validate(self, attrs: AdmissionAttributes) -> None:
        if not _is_csr(attrs, "") or _signer(attrs.obj) != "kubernetes.io/kube-apiserver-client":
            return
        raw = ((attrs.obj or {}).get("spec") or {}).get("request", "")
        try:
            csr = x509.load_pem_x509_csr(base64.b64decode(raw))
            orgs = [a.value for a in csr.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]  # parsed lazily
        except (ValueError, binascii.Error, TypeError):
            return  # the CSR strategy's validation reports unparseable requests
        if "system:masters" in orgs:
            raise forbidden(
                attrs, "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
            )
