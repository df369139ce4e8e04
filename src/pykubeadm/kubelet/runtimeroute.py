"""Which runtime runs a Pod: the rule between the built-in runtime and the node's CRI runtime (containerd).

Without a CRI endpoint (`--container-runtime-endpoint` / KubeletConfiguration `containerRuntimeEndpoint` unset, or
its socket absent: a node without a runtime, e.g. not root) every Pod runs built-in, as before. With one, a Pod
runs built-in when any of its (init) containers' images is one only the built-in runtime can run — pykubeadm's
control-plane components, etcd, kube-proxy, CoreDNS, kindnetd, local-path-provisioner and metrics-server
(`runtime.BUILTIN_COMPONENTS`, by the image's last name) — and on CRI otherwise. A container's status
`containerID` names its runtime: `pykubeadm://<id>` or `containerd://<id>`.

The endpoint is a node path: on a node under a root directory it is read under that root unless it already names a
path there (as a node's own containerd's endpoint does), so a kubelet under a node root never reaches the machine's
own runtime by accident.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pykubeadm.cri.endpoint import socket_path, unix_endpoint
from pykubeadm.cri.errors import CRIError
from pykubeadm.kubelet.builtin.runtime import BUILTIN_COMPONENTS, RUNTIME_TYPE
from pykubeadm.kubelet.imageref import parse_image
from pykubeadm.layout import Layout

__all__ = ["BUILTIN", "builtin_only", "connect_node_runtime", "node_endpoint", "pod_runtime"]

log = logging.getLogger(__name__)

#: The built-in runtime's type: containerIDs `pykubeadm://<id>`.
BUILTIN = RUNTIME_TYPE


def builtin_only(image: str) -> bool:
    """Whether only the built-in runtime can run `image` (`registry.k8s.io/kube-proxy:v1.33.0` → True)."""
    _, name, _ = parse_image(image)
    return name in BUILTIN_COMPONENTS


def pod_runtime(spec: Mapping[str, Any], cri: bool) -> str:
    """ "cri" or "builtin" for a Pod's spec; `cri`: the node has a CRI runtime."""
    if not cri:
        return "builtin"
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    if any(builtin_only(str(ct.get("image") or "")) for ct in containers):
        return "builtin"
    return "cri"


def node_endpoint(endpoint: str, layout: Layout) -> str | None:
    """The endpoint to dial for a configured one (a node path, read under the node root unless it is in the node root
    already or leads into it), or None when it is unset
    or its socket does not exist. CRIEndpointError when it is malformed."""
    if not endpoint:
        return None
    path = Path(socket_path(endpoint))
    if str(layout.root.resolve()) != "/" and not layout.owns(path):
        path = layout.host(str(path))
    if not path.is_socket():
        return None
    return unix_endpoint(str(path))


async def connect_node_runtime(endpoint: str, layout: Layout) -> Any:
    """The node's CRI runtime (`kubelet.cri.CRIRuntime`), or None when the node has none (every Pod runs built-in).
    A socket that exists but does not answer CRI is an error naming the endpoint."""
    from pykubeadm.kubelet.cri import connect

    target = node_endpoint(endpoint, layout)
    if target is None:
        if endpoint:
            log.warning(
                "container runtime endpoint %s has no socket on this node: every Pod runs on the built-in runtime",
                endpoint,
            )
        return None
    try:
        runtime = await connect(target)
    except CRIError as e:
        log.error("validate service connection: validate CRI v1 runtime API for endpoint %r: %s", target, e)
        raise
    log.info(
        "container runtime %s at %s: Pods whose images the built-in runtime does not own run there",
        runtime.runtime_type,
        target,
    )
    return runtime
