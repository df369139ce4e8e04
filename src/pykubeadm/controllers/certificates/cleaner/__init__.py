"""The csrcleaner controller (kube's pkg/controller/certificates/cleaner): controller.py."""

from pykubeadm.controllers.certificates.cleaner.controller import CSRCleanerController

__all__ = ["CSRCleanerController"]
