"""The endpoint controller (kube's pkg/controller/endpoint): controller.py. What it shares with endpointslice is
controllers/endpointsutil.py."""

from pykubeadm.controllers.endpoint.controller import EndpointController

__all__ = ["EndpointController"]
