"""The nodelifecycle controller (kube's pkg/controller/nodelifecycle): controller.py."""

from pykubeadm.controllers.nodelifecycle.controller import NodeLifecycleController

__all__ = ["NodeLifecycleController"]
