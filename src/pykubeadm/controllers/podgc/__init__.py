"""The pod garbage collector (kube's pkg/controller/podgc): controller.py."""

from pykubeadm.controllers.podgc.controller import PodGCController

__all__ = ["PodGCController"]
