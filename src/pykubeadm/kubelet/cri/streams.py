"""exec, attach and port-forward of a CRI container: the runtime's streaming server serves them. The kubelet asks
the runtime for a URL (CRI Exec/Attach/PortForward) and proxies the client's upgrade request there, as the real
kubelet does, so every protocol the runtime's server speaks (SPDY, WebSocket) reaches the client unchanged.
Offered to the kubelet's streaming routes as `ContainerRef.runtime_streams`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.kubelet.runtimeapi import KubeletRuntime

__all__ = ["CRIStreams"]


@dataclass(frozen=True)
class CRIStreams:
    """The streaming URLs of one container (and its sandbox, for port-forward)."""

    runtime: KubeletRuntime
    container_id: str
    sandbox_id: str

    async def exec_url(self, opts: Any) -> str:
        return await self.runtime.exec(
            api.ExecRequest(
                container_id=self.container_id,
                cmd=list(opts.command),
                tty=opts.tty,
                stdin=opts.stdin,
                stdout=opts.stdout,
                stderr=opts.stderr,
            )
        )

    async def attach_url(self, opts: Any) -> str:
        return await self.runtime.attach(
            api.AttachRequest(
                container_id=self.container_id, stdin=opts.stdin, tty=opts.tty, stdout=opts.stdout, stderr=opts.stderr
            )
        )

    async def port_forward_url(self, ports: Sequence[int]) -> str:
        return await self.runtime.port_forward(self.sandbox_id, ports)
