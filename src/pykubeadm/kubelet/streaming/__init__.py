"""The kubelet's streaming API (exec, attach, port-forward) in kubectl's protocols: WebSocket channels and SPDY/3.1.

`handlers.add_streaming_routes` serves it on :10250; `container.ContainerRef`/`ContainerLocator` is what the pod
runtime provides. The raw connection takeover after a 101 (shared with the API server's proxy) is
`pykubeadm.util.httpupgrade`.
"""

from pykubeadm.kubelet.streaming.container import ContainerLocator, ContainerRef
from pykubeadm.kubelet.streaming.handlers import add_streaming_routes

__all__ = ["ContainerLocator", "ContainerRef", "add_streaming_routes"]
