"""The deployment controller (kube's pkg/controller/deployment): the reconcile loop (controller.py), the rollout math
(util.py) and the status and conditions (status.py)."""

from pykubeadm.controllers.deployment.controller import DeploymentController

__all__ = ["DeploymentController"]
