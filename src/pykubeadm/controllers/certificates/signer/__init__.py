"""The csrsigning controller (kube's pkg/controller/certificates/signer): controller.py, and the signing authority
it issues with (authority.py)."""

from pykubeadm.controllers.certificates.signer.controller import CSRSigningController

__all__ = ["CSRSigningController"]
