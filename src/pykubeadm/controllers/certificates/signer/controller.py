"""The csrsigning controller: issues certificates for approved CSRs of the four built-in signers (signer.go).

`kubernetes.io/kube-apiserver-client`, `kube-apiserver-client-kubelet`, `kubelet-serving` and `legacy-unknown` all sign
with the CA of --cluster-signing-cert-file/--cluster-signing-key-file (loaded at start, or the controller does not start;
re-read when it changes, keeping the last good pair if the files break). A CSR is signed only
when approved (and not denied), not yet issued, not Failed, and it passes its signer's policy; a policy violation adds
Failed/SignerValidationFailure instead. Without a signing key (external CA mode) nothing is signed.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from lightkube.resources.certificates_v1 import CertificateSigningRequest, CertificateSigningRequestStatus

from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.certificates.csrutil import (
    KUBE_APISERVER_CLIENT_SIGNER,
    KUBELET_CLIENT_SIGNER,
    KUBELET_SERVING_SIGNER,
    LEGACY_UNKNOWN_SIGNER,
    CSRParseError,
    is_approved,
    is_failed,
    parse_csr,
    validate_kube_apiserver_client_usages,
    validate_kubelet_client_csr,
    validate_kubelet_serving_csr,
)
from pykubeadm.controllers.certificates.signer.authority import CAFiles, SigningError, ttl_for
from pykubeadm.controllers.controllerutil_api import model
from pykubeadm.controllers.runtime import Controller, ControllerStartError, TemporaryError
from pykubeadm.util.apitime import format_time

__all__ = ["SIGNER_POLICIES", "CSRSigningController", "failed_condition", "sign_decision", "validate_for_signer"]

log = logging.getLogger(__name__)

Policy = Callable[[x509.CertificateSigningRequest, Iterable[str]], str | None]

#: signerName → the policy its sub-controller enforces before signing (None = no restriction).
SIGNER_POLICIES: dict[str, Policy] = {
    KUBE_APISERVER_CLIENT_SIGNER: lambda _req, usages: validate_kube_apiserver_client_usages(usages),
    KUBELET_CLIENT_SIGNER: validate_kubelet_client_csr,
    KUBELET_SERVING_SIGNER: validate_kubelet_serving_csr,
    LEGACY_UNKNOWN_SIGNER: lambda _req, _usages: None,
}


def validate_for_signer(signer: str, req: x509.CertificateSigningRequest, usages: Iterable[str]) -> str | None:
    return SIGNER_POLICIES[signer](req, list(usages))


def sign_decision(csr: Mapping[str, Any]) -> bool:
    """True when csrsigning should act on this CSR: built-in signer, approved, not issued, not failed."""
    spec = csr.get("spec") or {}
    if (csr.get("status") or {}).get("certificate"):
        return False
    if not is_approved(csr) or is_failed(csr):
        return False
    return spec.get("signerName") in SIGNER_POLICIES


def failed_condition(message: str, now: datetime) -> dict[str, str]:
    return {
        "type": "Failed",
        "status": "True",
        "reason": "SignerValidationFailure",
        "message": message,
        "lastUpdateTime": format_time(now),
    }


class CSRSigningController(Controller):
    name = "csrsigning"
    service_account = "certificate-controller"
    workers = 16

    def setup(self) -> None:
        opts = self.ctx.options
        self.ca: CAFiles | None = None
        if opts is not None and opts.cluster_signing_cert_file and opts.cluster_signing_key_file:
            self.ca = CAFiles(opts.cluster_signing_cert_file, opts.cluster_signing_key_file)
            try:  # kube loads the pair when the signers start and refuses to start without it
                self.ca.current()
            except SigningError as err:
                raise ControllerStartError(
                    f"failed to start kubernetes.io/kubelet-serving certificate controller: {err}"
                ) from err
        self.cert_ttl: timedelta = opts.cluster_signing_duration if opts is not None else timedelta(hours=8760)
        self.csrs = self.watch(CertificateSigningRequest, self._on_event)

    def _on_event(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED" and self.ca is not None:
            self.queue.add(obj.metadata.name)

    async def sync(self, key: Any) -> None:
        obj = self.csrs.get(key)
        if obj is None or self.ca is None:
            return
        csr = obj.to_dict()
        if not sign_decision(csr):
            return
        spec = csr["spec"]
        try:
            req = parse_csr(csr)
        except CSRParseError as err:
            raise TemporaryError(f"unable to parse csr {key!r}: {err}") from err
        problem = validate_for_signer(spec["signerName"], req, spec.get("usages") or [])
        status = csr.setdefault("status", {})
        if problem is not None:
            status.setdefault("conditions", []).append(failed_condition(problem, datetime.now(UTC)))
            log.info("CSR %s refused by signer %s: %s", key, spec["signerName"], problem)
        else:
            try:
                ca = self.ca.current()
                cert = ca.sign(req, spec.get("usages") or [], ttl_for(spec.get("expirationSeconds"), self.cert_ttl))
            except SigningError as err:
                raise TemporaryError(f"error auto signing csr {key!r}: {err}") from err
            pem = cert.public_bytes(serialization.Encoding.PEM)
            status["certificate"] = base64.b64encode(pem).decode()
        await self._update_status(csr)
        if problem is None:
            log.info("signed CSR %s (%s)", key, spec["signerName"])

    async def _update_status(self, csr: dict[str, Any]) -> None:
        try:
            await self.client.replace(model(CertificateSigningRequestStatus, csr), csr["metadata"]["name"])
        except ApiError as err:
            if is_not_found(err):
                return
            if is_conflict(err):
                raise TemporaryError("conflict updating status; will retry with the newer object") from err
            raise
