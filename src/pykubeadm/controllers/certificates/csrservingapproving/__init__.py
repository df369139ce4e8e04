"""The kubelet serving-certificate approver (`--controllers=...,csrservingapproving`; off by default).

Not in kube-controller-manager: kube never auto-approves `kubernetes.io/kubelet-serving` CSRs because nothing there
checks that the requested names belong to the requesting node. This one approves a serving CSR only when its requester,
subject, usages, key and every DNS/IP SAN match the Node the requester is (policy.py); anything else stays Pending with
a Warning Event naming the first field or SAN that failed (controller.py).
"""

from pykubeadm.controllers.certificates.csrservingapproving.controller import (
    CONTROLLER_NAME,
    CSRServingApprovingController,
)
from pykubeadm.controllers.certificates.csrservingapproving.policy import ServingCheck, check_serving_csr

__all__ = ["CONTROLLER_NAME", "CSRServingApprovingController", "ServingCheck", "check_serving_csr"]
