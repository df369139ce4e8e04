"""The kubelet's streaming API (exec, attach, port-forward) in kubectl's protocols: WebSocket channels and SPDY/3.1.

`handlers.add_streaming_routes` serves it on :10250; `container.ContainerRef`/`ContainerLocator` is what the pod
runtime provides. The wire protocols shared with the API server (SPDY framing and sessions, WebSocket channels) are
`pykubeadm.streaming`; the raw connection takeover after a 101 is `pykubeadm.util.httpupgrade`.
"""

from pykubeadm.kubelet.streaming.container import ContainerLocator, ContainerRef
from pykubeadm.kubelet.streaming.handlers import add_streaming_routes

__all__ = ["ContainerLocator", "ContainerRef", "add_streaming_routes"]
