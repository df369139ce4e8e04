"""The ttl-after-finished controller (kube's pkg/controller/ttlafterfinished): controller.py."""

from pykubeadm.controllers.ttlafterfinished.controller import TTLAfterFinishedController

__all__ = ["TTLAfterFinishedController"]
