"""The CRI endpoint format (`unix:///absolute/path`, as the kubelet's `--container-runtime-endpoint` and kubeadm's
`nodeRegistration.criSocket` take it): parsing it into a socket path and a gRPC target; used by the CRI client.
"""

from __future__ import annotations

import os

from pykubeadm.errors import KubeadmError

__all__ = ["UNIX_SCHEME", "CRIEndpointError", "socket_path", "unix_endpoint"]


class CRIEndpointError(KubeadmError):
    """A CRI endpoint that cannot be dialled (only `unix://` with an absolute path is supported on Linux). Defined
    here, without gRPC, so that what only writes endpoints (a node's containerd config) does not load it."""


UNIX_SCHEME = "unix://"
#: sun_path holds 108 bytes with its terminating NUL.
_MAX_SUN_PATH = 107


def socket_path(endpoint: str) -> str:
    """The absolute socket path of a `unix:///abs/path` endpoint, or CRIEndpointError saying what to write instead."""
    if "://" not in endpoint:
        raise CRIEndpointError(
            f'CRI endpoint "{endpoint}" has no URL scheme: write it as "unix://{endpoint}" '
            f"(e.g. unix:///var/run/containerd/containerd.sock)"
        )
    if not endpoint.startswith(UNIX_SCHEME):
        raise CRIEndpointError(
            f'unsupported URL scheme "{endpoint.split("://", 1)[0]}" for CRI endpoint "{endpoint}": only unix is '
            "supported on Linux (e.g. unix:///var/run/containerd/containerd.sock)"
        )
    path = endpoint.removeprefix(UNIX_SCHEME)
    if not path.startswith("/"):
        raise CRIEndpointError(
            f'CRI endpoint "{endpoint}" must name an absolute socket path: unix:///{path.lstrip("/")} '
            "(three slashes: the scheme, then the path from /)"
        )
    if len(os.fsencode(path)) > _MAX_SUN_PATH:
        raise CRIEndpointError(
            f'CRI endpoint "{endpoint}": the socket path is longer than {_MAX_SUN_PATH} bytes, which a unix socket '
            "cannot be bound or dialled at; choose a shorter path"
        )
    return path


def unix_endpoint(path: str) -> str:
    """`unix://` + an absolute socket path (the endpoint form the kubelet and kubeadm write)."""
    return UNIX_SCHEME + os.path.abspath(path)
