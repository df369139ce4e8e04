"""The HorizontalPodAutoscaler controller (kube's pkg/controller/podautoscaler): replicas.py is the replica
calculator, behavior.py the stabilization and scaling rules, controller.py the reconcile loop."""

from pykubeadm.controllers.podautoscaler.controller import HorizontalController

__all__ = ["HorizontalController"]
