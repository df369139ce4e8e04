"""The taint-eviction-controller (kube's pkg/controller/tainteviction): controller.py."""

from pykubeadm.controllers.tainteviction.controller import TaintEvictionController

__all__ = ["TaintEvictionController"]
