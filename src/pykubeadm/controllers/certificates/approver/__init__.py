"""The csrapproving controller (kube's pkg/controller/certificates/approver): controller.py."""

from pykubeadm.controllers.certificates.approver.controller import CSRApprovingController

__all__ = ["CSRApprovingController"]
