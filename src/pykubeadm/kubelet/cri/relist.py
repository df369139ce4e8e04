"""`ContainerRelist`: one ListContainers for every running container the kubelet waits on, as the kubelet's PLEG
relists the runtime instead of asking each container in turn. A waiter is woken when its container is no longer
running (exited, or gone from the list); the caller then asks ContainerStatus once for the exit code and reason.

With 100 Pods a per-container poll every 0.25 s is 400 CRI calls a second; the relist is 1/`period` calls, whatever
the number of containers.
"""

from __future__ import annotations

import asyncio
import logging

from pykubeadm.cri.errors import CRIError
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.kubelet.runtimeapi import KubeletRuntime

__all__ = ["ContainerRelist"]

log = logging.getLogger(__name__)

_LIVE = (api.ContainerState.CONTAINER_CREATED, api.ContainerState.CONTAINER_RUNNING)


class ContainerRelist:
    """Relists the runtime's containers every `period` seconds while anyone waits on one."""

    def __init__(self, runtime: KubeletRuntime, *, period: float = 0.25) -> None:
        self.runtime = runtime
        self.period = period
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._task: asyncio.Task[None] | None = None

    async def wait_not_running(self, container_id: str) -> None:
        """Return once the container is neither created nor running in the runtime's list."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(container_id, []).append(fut)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())
        try:
            await fut
        finally:
            futs = self._waiters.get(container_id)
            if futs is not None and fut in futs:
                futs.remove(fut)
                if not futs:
                    del self._waiters[container_id]

    async def _run(self) -> None:
        while self._waiters:
            try:
                live = {c.id for c in await self.runtime.list_containers() if c.state in _LIVE}
            except CRIError as err:
                log.warning("relisting the runtime's containers failed: %s", err)
            else:
                for container_id, futs in list(self._waiters.items()):
                    if container_id not in live:
                        for fut in futs:
                            if not fut.done():
                                fut.set_result(None)
            await asyncio.sleep(self.period)
