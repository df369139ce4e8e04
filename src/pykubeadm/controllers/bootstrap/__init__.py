"""The bootstrap-token controllers (kube's pkg/controller/bootstrap): bootstrapsigner.py signs cluster-info for each
token, tokencleaner.py deletes expired token Secrets."""

from pykubeadm.controllers.bootstrap.bootstrapsigner import BootstrapSignerController
from pykubeadm.controllers.bootstrap.tokencleaner import TokenCleanerController

__all__ = ["BootstrapSignerController", "TokenCleanerController"]
