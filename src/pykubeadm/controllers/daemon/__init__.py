"""The daemonset controller (kube's pkg/controller/daemon): the reconcile loop (controller.py) and its placement and
rolling-update decisions (util.py)."""

from pykubeadm.controllers.daemon.controller import DaemonSetController

__all__ = ["DaemonSetController"]
