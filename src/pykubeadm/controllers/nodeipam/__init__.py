"""The nodeipam controller's range allocator (kube's pkg/controller/nodeipam): controller.py."""

from pykubeadm.controllers.nodeipam.controller import NodeIPAMController

__all__ = ["NodeIPAMController"]
