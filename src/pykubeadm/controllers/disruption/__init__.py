"""The disruption controller (kube's pkg/controller/disruption): controller.py."""

from pykubeadm.controllers.disruption.controller import DisruptionController

__all__ = ["DisruptionController"]
