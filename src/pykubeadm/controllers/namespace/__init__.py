"""The namespace controller (kube's pkg/controller/namespace): controller.py."""

from pykubeadm.controllers.namespace.controller import NamespaceController

__all__ = ["NamespaceController"]
