"""The exceptions a CRI call raises, each carrying the runtime's own message; raised by `pykubeadm.cri.client`.

CRIError                     any failed CRI call: `rpc error: code = <Code> desc = <the runtime's message>`
├── CRIUnavailable           the runtime does not answer on its socket (not running, wrong path, refused)
├── CRIDeadlineExceeded      the call took longer than its timeout
├── CRINotFound              the sandbox, container or image named does not exist
└── CRIUnimplemented         the runtime does not serve this call (e.g. containerd 1.6 and RuntimeConfig)
CRIEndpointError             an endpoint that is not `unix:///absolute/path`

`str()` of a CRIError is grpc-go's status text, so messages read as kubeadm's and the kubelet's do.
"""

from __future__ import annotations

import grpc

from pykubeadm.cri.endpoint import CRIEndpointError
from pykubeadm.errors import KubeadmError

__all__ = [
    "CRIDeadlineExceeded",
    "CRIEndpointError",
    "CRIError",
    "CRINotFound",
    "CRIUnavailable",
    "CRIUnimplemented",
    "from_rpc_error",
]

#: grpc-go's names of the status codes (codes.Code.String()), which its error text carries.
_GO_CODE_NAMES = {
    grpc.StatusCode.CANCELLED: "Canceled",
    grpc.StatusCode.UNKNOWN: "Unknown",
    grpc.StatusCode.INVALID_ARGUMENT: "InvalidArgument",
    grpc.StatusCode.DEADLINE_EXCEEDED: "DeadlineExceeded",
    grpc.StatusCode.NOT_FOUND: "NotFound",
    grpc.StatusCode.ALREADY_EXISTS: "AlreadyExists",
    grpc.StatusCode.PERMISSION_DENIED: "PermissionDenied",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "ResourceExhausted",
    grpc.StatusCode.FAILED_PRECONDITION: "FailedPrecondition",
    grpc.StatusCode.ABORTED: "Aborted",
    grpc.StatusCode.OUT_OF_RANGE: "OutOfRange",
    grpc.StatusCode.UNIMPLEMENTED: "Unimplemented",
    grpc.StatusCode.INTERNAL: "Internal",
    grpc.StatusCode.UNAVAILABLE: "Unavailable",
    grpc.StatusCode.DATA_LOSS: "DataLoss",
    grpc.StatusCode.UNAUTHENTICATED: "Unauthenticated",
}


class CRIError(KubeadmError):
    """A failed CRI call. `method` is the RPC (e.g. "RunPodSandbox"), `code` the gRPC status, `message` the
    runtime's own explanation (containerd's text, unchanged)."""

    def __init__(self, method: str, code: grpc.StatusCode, message: str) -> None:
        self.method = method
        self.code = code
        self.message = message
        super().__init__(f"rpc error: code = {_GO_CODE_NAMES.get(code, code.name)} desc = {message}")


class CRIUnavailable(CRIError):
    """The runtime is not reachable on its endpoint."""


class CRIDeadlineExceeded(CRIError):
    """The call did not finish within its timeout."""


class CRINotFound(CRIError):
    """The object the call names does not exist in the runtime."""


class CRIUnimplemented(CRIError):
    """The runtime does not implement this call."""


_BY_CODE: dict[grpc.StatusCode, type[CRIError]] = {
    grpc.StatusCode.UNAVAILABLE: CRIUnavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: CRIDeadlineExceeded,
    grpc.StatusCode.NOT_FOUND: CRINotFound,
    grpc.StatusCode.UNIMPLEMENTED: CRIUnimplemented,
}


def from_rpc_error(method: str, code: grpc.StatusCode, details: str | None) -> CRIError:
    """The CRIError subclass for a gRPC status (what the client raises for a failed call)."""
    return _BY_CODE.get(code, CRIError)(method, code, details or "")
