"""The csrservingapproving controller: approves kubelet serving CSRs whose SANs are the requesting Node's addresses.

Watches CSRs and Nodes. A pending `kubernetes.io/kubelet-serving` CSR is judged by `policy.check_serving_csr`
against the requester's Node (from the shared Node informer); when it passes, the controller appends
`Approved/AutoApproved` through `/approval` with a message naming itself, and csrsigning signs it. When it fails, the
CSR stays Pending (never Denied, as kube's approver) and a Warning Event `AutoApprovalRefused` on the CSR names the
first field or SAN that failed; the CSR is judged again when its Node changes (its addresses may arrive later).
It writes as ServiceAccount kube-system/kubelet-serving-csr-approver (the apiserver's
`system:controller:kubelet-serving-csr-approver` role: approve on signer kubernetes.io/kubelet-serving only).
"""

from __future__ import annotations

import logging
from typing import Any

from lightkube.resources.certificates_v1 import CertificateSigningRequest
from lightkube.resources.core_v1 import Node

from pykubeadm.controllers.certificates.approver.controller import approve
from pykubeadm.controllers.certificates.csrservingapproving.policy import check_serving_csr, node_name_of
from pykubeadm.controllers.certificates.csrutil import KUBELET_SERVING_SIGNER, CSRParseError, has_condition, parse_csr
from pykubeadm.controllers.controllerutil_api import EventRecorder
from pykubeadm.controllers.runtime import Controller, PermanentError

__all__ = ["APPROVAL_MESSAGE", "CONTROLLER_NAME", "REFUSED_REASON", "CSRServingApprovingController"]

log = logging.getLogger(__name__)

CONTROLLER_NAME = "csrservingapproving"
#: the Warning Event's reason when a serving CSR is left Pending
REFUSED_REASON = "AutoApprovalRefused"
#: the Approved condition's message (who approved, and on what grounds)
APPROVAL_MESSAGE = (
    "Auto approving kubelet serving certificate after checking its SANs against Node {node} (csrservingapproving)."
)


class CSRServingApprovingController(Controller):
    name = CONTROLLER_NAME
    service_account = "kubelet-serving-csr-approver"
    workers = 4

    def setup(self) -> None:
        self.csrs = self.watch(CertificateSigningRequest, self._on_csr)
        self.nodes = self.watch(Node, self._on_node)
        self.recorder = EventRecorder(self.client, "csrservingapproving-controller")
        #: node name → the pending serving CSRs it requested (judged again when the Node changes)
        self._pending: dict[str, set[str]] = {}

    def _on_csr(self, event: str, obj: Any, old: Any) -> None:
        if obj.spec is None or obj.spec.signerName != KUBELET_SERVING_SIGNER:
            return
        if event == "DELETED":
            for names in self._pending.values():
                names.discard(obj.metadata.name)
            return
        self.queue.add(obj.metadata.name)

    def _on_node(self, event: str, obj: Any, old: Any) -> None:
        for key in self._pending.get(obj.metadata.name, set()):
            self.queue.add(key)

    async def sync(self, key: Any) -> None:
        obj = self.csrs.get(key)
        if obj is None:
            return
        csr = obj.to_dict()
        spec = csr.get("spec") or {}
        if spec.get("signerName") != KUBELET_SERVING_SIGNER:
            return
        node_name = node_name_of(str(spec.get("username") or ""))
        if (
            (csr.get("status") or {}).get("certificate")
            or has_condition(csr, "Approved")
            or has_condition(csr, "Denied")
        ):
            self._pending.get(node_name, set()).discard(key)
            return
        try:
            req = parse_csr(csr)
        except CSRParseError as err:
            self._refuse(csr, f"spec.request: {err}")
            raise PermanentError(f"unable to parse csr {key!r}: {err}") from err
        node = self.nodes.get(node_name) if node_name else None
        verdict = check_serving_csr(spec, req, node.to_dict() if node is not None else None)
        if not verdict.ok:
            if node_name:
                self._pending.setdefault(node_name, set()).add(key)
            message = f"not approving kubelet serving CSR {key}: {verdict.field}: {verdict.problem}"
            self._refuse(csr, message)
            log.info("%s", message)
            return
        self._pending.get(node_name, set()).discard(key)
        await approve(self.client, csr, APPROVAL_MESSAGE.format(node=node_name))

    def _refuse(self, csr: dict[str, Any], message: str) -> None:
        self.recorder.event(
            csr,
            "Warning",
            REFUSED_REASON,
            message,
            kind="CertificateSigningRequest",
            api_version="certificates.k8s.io/v1",
        )
