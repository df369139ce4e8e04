"""The garbage collector (kube's pkg/controller/garbagecollector): the controller and its I/O (controller.py), the
object graph and its decisions (graph.py)."""

from pykubeadm.controllers.garbagecollector.controller import GarbageCollectorController

__all__ = ["GarbageCollectorController"]
