"""The root-ca-cert-publisher controller (kube's pkg/controller/certificates/rootcacertpublisher): controller.py."""

from pykubeadm.controllers.certificates.rootcacertpublisher.controller import RootCACertPublisher

__all__ = ["RootCACertPublisher"]
