"""The replicaset controller (kube's pkg/controller/replicaset): controller.py."""

from pykubeadm.controllers.replicaset.controller import ReplicaSetController

__all__ = ["ReplicaSetController"]
