"""The endpointslice controller (kube's pkg/controller/endpointslice): controller.py. What it shares with endpoint is
controllers/endpointsutil.py."""

from pykubeadm.controllers.endpointslice.controller import EndpointSliceController

__all__ = ["EndpointSliceController"]
