"""The csrapproving controller: auto-approves kubelet client CSRs whose requester a SubjectAccessReview authorises.

Recognisers, in order (sarapprove.go): `selfnodeclient` (kubelet-client signer, requester == subject CN, kubelet
client profile) and `nodeclient` (kubelet-client signer, kubelet client profile). For each that matches, a
SubjectAccessReview asks whether the requester may `create certificatesigningrequests/<recogniser>`; the first allowed
review appends Approved/AutoApproved through `/approval`. Nothing is ever denied; everything else stays pending.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID
from lightkube.resources.authorization_v1 import SubjectAccessReview
from lightkube.resources.certificates_v1 import CertificateSigningRequest, CertificateSigningRequestApproval
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding

from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.certificates.csrutil import (
    KUBELET_CLIENT_SIGNER,
    CSRParseError,
    has_condition,
    parse_csr,
    validate_kubelet_client_csr,
)
from pykubeadm.controllers.controllerutil_api import model
from pykubeadm.controllers.runtime import Controller, TemporaryError

__all__ = [
    "RECOGNIZERS",
    "CSRApprovingController",
    "Recognizer",
    "approval_condition",
    "approve",
    "recognize",
    "sar_spec",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Recognizer:
    """A kind of CSR the approver knows, the SAR subresource that authorises it, and the approval message."""

    name: str
    matches: Callable[[Mapping[str, Any], x509.CertificateSigningRequest], bool]
    message: str


def _is_node_client(csr: Mapping[str, Any], req: x509.CertificateSigningRequest) -> bool:
    spec = csr.get("spec") or {}
    if spec.get("signerName") != KUBELET_CLIENT_SIGNER:
        return False
    return validate_kubelet_client_csr(req, spec.get("usages") or []) is None


def _is_self_node_client(csr: Mapping[str, Any], req: x509.CertificateSigningRequest) -> bool:
    cns = req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    cn = str(cns[0].value) if cns else ""
    if (csr.get("spec") or {}).get("username") != cn:
        return False
    return _is_node_client(csr, req)


RECOGNIZERS: tuple[Recognizer, ...] = (
    Recognizer(
        "selfnodeclient",
        _is_self_node_client,
        "Auto approving self kubelet client certificate after SubjectAccessReview.",
    ),
    Recognizer("nodeclient", _is_node_client, "Auto approving kubelet client certificate after SubjectAccessReview."),
)


def recognize(csr: Mapping[str, Any], req: x509.CertificateSigningRequest) -> list[Recognizer]:
    """The recognisers matching this CSR, in the order they are tried."""
    return [r for r in RECOGNIZERS if r.matches(csr, req)]


def sar_spec(csr: Mapping[str, Any], subresource: str) -> dict[str, Any]:
    """The SubjectAccessReview spec asking whether the CSR's requester may create certificatesigningrequests/<sub>."""
    spec = csr.get("spec") or {}
    out: dict[str, Any] = {
        "user": spec.get("username") or "",
        "groups": list(spec.get("groups") or []),
        "resourceAttributes": {
            "group": "certificates.k8s.io",
            "resource": "certificatesigningrequests",
            "verb": "create",
            "subresource": subresource,
            "version": "*",
        },
    }
    if spec.get("uid"):
        out["uid"] = spec["uid"]
    if spec.get("extra"):
        out["extra"] = {k: list(v) for k, v in spec["extra"].items()}
    return out


def approval_condition(message: str) -> dict[str, str]:
    """The Approved condition; the API server fills lastUpdateTime / lastTransitionTime."""
    return {"type": "Approved", "status": "True", "reason": "AutoApproved", "message": message}


class CSRApprovingController(Controller):
    name = "csrapproving"
    service_account = "certificate-controller"
    workers = 16

    def setup(self) -> None:
        self.csrs = self.watch(CertificateSigningRequest, self._on_event)
        # Not upstream: a CSR whose review was denied is retried at once when cluster RBAC changes (kubeadm creates
        # the auto-approve bindings after the control plane is up), instead of waiting out its backoff.
        self._denied: set[str] = set()
        self.watch(ClusterRoleBinding, self._on_rbac)
        self.watch(ClusterRole, self._on_rbac)

    def _on_event(self, event: str, obj: Any, old: Any) -> None:
        if event == "DELETED":
            self._denied.discard(obj.metadata.name)
        else:
            self.queue.add(obj.metadata.name)

    def _on_rbac(self, event: str, obj: Any, old: Any) -> None:
        for key in list(self._denied):
            self.queue.forget(key)
            self.queue.add(key)

    async def authorized(self, csr: Mapping[str, Any], subresource: str) -> bool:
        review = model(SubjectAccessReview, {"spec": sar_spec(csr, subresource)})
        result = await self.client.create(review)
        return bool(result.status and result.status.allowed)

    async def sync(self, key: Any) -> None:
        obj = self.csrs.get(key)
        if obj is None:
            return
        csr = obj.to_dict()
        if (csr.get("status") or {}).get("certificate"):
            return
        if has_condition(csr, "Approved") or has_condition(csr, "Denied"):
            return
        try:
            req = parse_csr(csr)
        except CSRParseError as err:
            raise TemporaryError(f"unable to parse csr {key!r}: {err}") from err
        tried: list[str] = []
        for recognizer in recognize(csr, req):
            tried.append(recognizer.name)
            if await self.authorized(csr, recognizer.name):
                await self._approve(csr, recognizer.message)
                self._denied.discard(key)
                return
        if tried:
            self._denied.add(key)
            message = f"recognized csr {key!r} as [{' '.join(tried)}] but subject access review was not approved"
            if self.queue.num_requeues(key) == 0:
                log.info("%s", message)  # later retries stay quiet (they are rate limited)
            raise TemporaryError(message)

    async def _approve(self, csr: dict[str, Any], message: str) -> None:
        await approve(self.client, csr, message)


async def approve(client: Any, csr: dict[str, Any], message: str) -> None:
    """Append Approved/AutoApproved with `message` through `/approval` (a CSR gone meanwhile is fine; a conflict is
    retried by the caller's queue with the newer object)."""
    status = csr.setdefault("status", {})
    status.setdefault("conditions", []).append(approval_condition(message))
    body = model(CertificateSigningRequestApproval, csr)
    try:
        await client.replace(body, csr["metadata"]["name"])
    except ApiError as err:
        if is_not_found(err):
            return
        if is_conflict(err):
            raise TemporaryError("conflict updating approval; will retry with the newer object") from err
        raise
    log.info("approved CSR %s (%s)", csr["metadata"]["name"], message)
