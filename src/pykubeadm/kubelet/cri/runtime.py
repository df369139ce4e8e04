"""`CRIRuntime`: the kubelet's runtime boundary (`kubelet.runtimeapi.KubeletRuntime`) served by a CRI runtime over the
unix socket of `--container-runtime-endpoint`; its runtime type (containerIDs' scheme) is what the runtime's Version
names (containerd → `containerd://`)."""

from __future__ import annotations

from pykubeadm.cri.client import DEFAULT_TIMEOUT, CRIClient
from pykubeadm.kubelet.runtimeapi import KubeletRuntime

__all__ = ["CRIRuntime", "connect"]


class CRIRuntime(CRIClient):
    """A CRI client that knows its runtime's type and version (from Version's runtime_name and runtime_version)."""

    def __init__(
        self, endpoint: str, runtime_type: str, *, runtime_version: str = "", timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        super().__init__(endpoint, timeout=timeout)
        self._runtime_type = runtime_type
        self.runtime_version = runtime_version

    @property
    def runtime_type(self) -> str:
        return self._runtime_type

    @property
    def version_url(self) -> str:
        """The Node's `status.nodeInfo.containerRuntimeVersion`, as the kubelet writes it: `containerd://1.6.20`."""
        return f"{self._runtime_type}://{self.runtime_version}"


async def connect(endpoint: str, *, timeout: float = DEFAULT_TIMEOUT) -> CRIRuntime:
    """Dial the runtime and ask its Version (so a wrong endpoint fails here, with the runtime's message)."""
    probe = CRIClient(endpoint, timeout=timeout)
    try:
        version = await probe.version()
    finally:
        await probe.close()
    return CRIRuntime(endpoint, version.runtime_name, runtime_version=version.runtime_version, timeout=timeout)


# The boundary is checked statically: CRIRuntime must keep every call the kubelet may make.
_: type[KubeletRuntime] = CRIRuntime
