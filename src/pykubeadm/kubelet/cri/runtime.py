"""`CRIRuntime`: the kubelet's runtime boundary (`kubelet.runtimeapi.KubeletRuntime`) served by a CRI runtime over the
unix socket of `--container-runtime-endpoint`; its runtime type (containerIDs' scheme) is what the runtime's Version
names (containerd → `containerd://`)."""

from __future__ import annotations

from pykubeadm.cri.client import DEFAULT_TIMEOUT, CRIClient
from pykubeadm.kubelet.runtimeapi import KubeletRuntime

__all__ = ["CRIRuntime", "connect"]


class CRIRuntime(CRIClient):
    """A CRI client that knows its runtime's type (from Version's runtime_name)."""

    def __init__(self, endpoint: str, runtime_type: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        super().__init__(endpoint, timeout=timeout)
        self._runtime_type = runtime_type

    @property
    def runtime_type(self) -> str:
        return self._runtime_type


async def connect(endpoint: str, *, timeout: float = DEFAULT_TIMEOUT) -> CRIRuntime:
    """Dial the runtime and ask its Version (so a wrong endpoint fails here, with the runtime's message)."""
    probe = CRIClient(endpoint, timeout=timeout)
    try:
        version = await probe.version()
    finally:
        await probe.close()
    return CRIRuntime(endpoint, version.runtime_name, timeout=timeout)


# The boundary is checked statically: CRIRuntime must keep every call the kubelet may make.
_: type[KubeletRuntime] = CRIRuntime
