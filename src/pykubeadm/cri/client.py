"""A typed asyncio client of a container runtime's CRI (`runtime.v1` RuntimeService and ImageService) over its unix
socket; used by kubeadm (preflight, `config images pull`, `reset`) and by the kubelet's CRI runtime.

Open it inside a running event loop (`async with CRIClient(endpoint) as cri:`); each call has a deadline (the client's
`timeout` unless the call takes its own) and a failed call raises a `pykubeadm.cri.errors.CRIError` subclass that
carries the runtime's message. Requests and responses are the generated `runtime.v1` messages (`pykubeadm.cri.v1.api_pb2`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Final, TypeVar

import grpc
import grpc.aio

from pykubeadm.cri.endpoint import socket_path
from pykubeadm.cri.errors import from_rpc_error
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.cri.v1 import api_pb2_grpc

__all__ = ["DEFAULT_TIMEOUT", "KUBEADM_TIMEOUT", "CRIClient"]

#: The kubelet's default `runtimeRequestTimeout` (2m).
DEFAULT_TIMEOUT: Final = 120.0
#: kubeadm's timeout for a CRI call (cmd/kubeadm/app/util/runtime defaultTimeout, inherited from crictl).
KUBEADM_TIMEOUT: Final = 2.0
#: The kubelet's largest CRI message (16 MiB: ListContainers of a busy node, ExecSync output).
_MAX_MESSAGE: Final = 16 * 1024 * 1024

R = TypeVar("R")


class CRIClient:
    """One gRPC channel to a runtime, with RuntimeService and ImageService calls as typed coroutines."""

    def __init__(self, endpoint: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._channel = grpc.aio.insecure_channel(
            f"unix://{socket_path(endpoint)}",
            options=[
                ("grpc.max_receive_message_length", _MAX_MESSAGE),
                ("grpc.max_send_message_length", _MAX_MESSAGE),
                ("grpc.enable_http_proxy", 0),
            ],
        )
        self._runtime = api_pb2_grpc.RuntimeServiceStub(self._channel)
        self._images = api_pb2_grpc.ImageServiceStub(self._channel)

    async def __aenter__(self) -> CRIClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close()

    async def _call(self, method: str, stub: Callable[..., Awaitable[R]], request: Any, timeout: float | None) -> R:
        try:
            return await stub(request, timeout=self.timeout if timeout is None else timeout)
        except grpc.aio.AioRpcError as err:
            raise from_rpc_error(method, err.code(), err.details()) from None

    # --- RuntimeService: the runtime ---------------------------------------------------------------------------------

    async def version(self, *, timeout: float | None = None) -> api.VersionResponse:
        """The runtime's name and version and the CRI version it serves."""
        return await self._call("Version", self._runtime.Version, api.VersionRequest(version="v1"), timeout)

    async def status(self, *, verbose: bool = False, timeout: float | None = None) -> api.StatusResponse:
        """RuntimeReady/NetworkReady conditions; with `verbose`, the runtime's info (containerd: its CRI config)."""
        return await self._call("Status", self._runtime.Status, api.StatusRequest(verbose=verbose), timeout)

    # --- RuntimeService: sandboxes -----------------------------------------------------------------------------------

    async def run_pod_sandbox(
        self, config: api.PodSandboxConfig, *, runtime_handler: str = "", timeout: float | None = None
    ) -> str:
        """Create and start a Pod's sandbox; returns its id."""
        req = api.RunPodSandboxRequest(config=config, runtime_handler=runtime_handler)
        resp: api.RunPodSandboxResponse = await self._call("RunPodSandbox", self._runtime.RunPodSandbox, req, timeout)
        return resp.pod_sandbox_id

    async def stop_pod_sandbox(self, sandbox_id: str, *, timeout: float | None = None) -> None:
        """Stop every container of the sandbox and release its network (idempotent)."""
        req = api.StopPodSandboxRequest(pod_sandbox_id=sandbox_id)
        await self._call("StopPodSandbox", self._runtime.StopPodSandbox, req, timeout)

    async def remove_pod_sandbox(self, sandbox_id: str, *, timeout: float | None = None) -> None:
        """Remove a stopped sandbox and its containers (idempotent)."""
        req = api.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id)
        await self._call("RemovePodSandbox", self._runtime.RemovePodSandbox, req, timeout)

    async def pod_sandbox_status(
        self, sandbox_id: str, *, verbose: bool = False, timeout: float | None = None
    ) -> api.PodSandboxStatusResponse:
        req = api.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id, verbose=verbose)
        return await self._call("PodSandboxStatus", self._runtime.PodSandboxStatus, req, timeout)

    async def list_pod_sandbox(
        self, filter: api.PodSandboxFilter | None = None, *, timeout: float | None = None
    ) -> Sequence[api.PodSandbox]:
        req = api.ListPodSandboxRequest(filter=filter)
        resp: api.ListPodSandboxResponse = await self._call(
            "ListPodSandbox", self._runtime.ListPodSandbox, req, timeout
        )
        return list(resp.items)

    # --- RuntimeService: containers ----------------------------------------------------------------------------------

    async def create_container(
        self,
        sandbox_id: str,
        config: api.ContainerConfig,
        sandbox_config: api.PodSandboxConfig,
        *,
        timeout: float | None = None,
    ) -> str:
        """Create a container in a sandbox (not started); returns its id."""
        req = api.CreateContainerRequest(pod_sandbox_id=sandbox_id, config=config, sandbox_config=sandbox_config)
        resp: api.CreateContainerResponse = await self._call(
            "CreateContainer", self._runtime.CreateContainer, req, timeout
        )
        return resp.container_id

    async def start_container(self, container_id: str, *, timeout: float | None = None) -> None:
        req = api.StartContainerRequest(container_id=container_id)
        await self._call("StartContainer", self._runtime.StartContainer, req, timeout)

    async def stop_container(self, container_id: str, grace_seconds: int, *, timeout: float | None = None) -> None:
        """SIGTERM (the image's stop signal), SIGKILL after `grace_seconds`; the deadline leaves room for both."""
        req = api.StopContainerRequest(container_id=container_id, timeout=grace_seconds)
        deadline = timeout if timeout is not None else self.timeout + grace_seconds
        await self._call("StopContainer", self._runtime.StopContainer, req, deadline)

    async def remove_container(self, container_id: str, *, timeout: float | None = None) -> None:
        req = api.RemoveContainerRequest(container_id=container_id)
        await self._call("RemoveContainer", self._runtime.RemoveContainer, req, timeout)

    async def list_containers(
        self, filter: api.ContainerFilter | None = None, *, timeout: float | None = None
    ) -> Sequence[api.Container]:
        req = api.ListContainersRequest(filter=filter)
        resp: api.ListContainersResponse = await self._call(
            "ListContainers", self._runtime.ListContainers, req, timeout
        )
        return list(resp.containers)

    async def container_status(
        self, container_id: str, *, verbose: bool = False, timeout: float | None = None
    ) -> api.ContainerStatus:
        req = api.ContainerStatusRequest(container_id=container_id, verbose=verbose)
        resp: api.ContainerStatusResponse = await self._call(
            "ContainerStatus", self._runtime.ContainerStatus, req, timeout
        )
        return resp.status

    async def exec_sync(
        self, container_id: str, cmd: Sequence[str], *, exec_timeout: int = 0, timeout: float | None = None
    ) -> api.ExecSyncResponse:
        """Run `cmd` in the container and wait for it (stdout, stderr, exit code); `exec_timeout` seconds, 0 = none."""
        req = api.ExecSyncRequest(container_id=container_id, cmd=list(cmd), timeout=exec_timeout)
        deadline = timeout if timeout is not None else self.timeout + exec_timeout
        return await self._call("ExecSync", self._runtime.ExecSync, req, deadline)

    async def exec(self, request: api.ExecRequest, *, timeout: float | None = None) -> str:
        """The URL on the runtime's streaming server that serves this exec."""
        resp: api.ExecResponse = await self._call("Exec", self._runtime.Exec, request, timeout)
        return resp.url

    async def attach(self, request: api.AttachRequest, *, timeout: float | None = None) -> str:
        resp: api.AttachResponse = await self._call("Attach", self._runtime.Attach, request, timeout)
        return resp.url

    async def port_forward(self, sandbox_id: str, ports: Sequence[int], *, timeout: float | None = None) -> str:
        req = api.PortForwardRequest(pod_sandbox_id=sandbox_id, port=list(ports))
        resp: api.PortForwardResponse = await self._call("PortForward", self._runtime.PortForward, req, timeout)
        return resp.url

    async def container_stats(self, container_id: str, *, timeout: float | None = None) -> api.ContainerStats:
        req = api.ContainerStatsRequest(container_id=container_id)
        resp: api.ContainerStatsResponse = await self._call(
            "ContainerStats", self._runtime.ContainerStats, req, timeout
        )
        return resp.stats

    async def list_container_stats(
        self, filter: api.ContainerStatsFilter | None = None, *, timeout: float | None = None
    ) -> Sequence[api.ContainerStats]:
        req = api.ListContainerStatsRequest(filter=filter)
        resp: api.ListContainerStatsResponse = await self._call(
            "ListContainerStats", self._runtime.ListContainerStats, req, timeout
        )
        return list(resp.stats)

    async def reopen_container_log(self, container_id: str, *, timeout: float | None = None) -> None:
        req = api.ReopenContainerLogRequest(container_id=container_id)
        await self._call("ReopenContainerLog", self._runtime.ReopenContainerLog, req, timeout)

    # --- ImageService ------------------------------------------------------------------------------------------------

    async def list_images(
        self, filter: api.ImageFilter | None = None, *, timeout: float | None = None
    ) -> Sequence[api.Image]:
        resp: api.ListImagesResponse = await self._call(
            "ListImages", self._images.ListImages, api.ListImagesRequest(filter=filter), timeout
        )
        return list(resp.images)

    async def image_status(self, image: str, *, timeout: float | None = None) -> api.Image | None:
        """The image as the runtime stores it, or None when it is not present."""
        req = api.ImageStatusRequest(image=api.ImageSpec(image=image))
        resp: api.ImageStatusResponse = await self._call("ImageStatus", self._images.ImageStatus, req, timeout)
        return resp.image if resp.HasField("image") else None

    async def pull_image(
        self,
        image: str,
        *,
        auth: api.AuthConfig | None = None,
        sandbox_config: api.PodSandboxConfig | None = None,
        timeout: float | None = None,
    ) -> str:
        """Pull `image` (with registry credentials when given); returns the image reference the runtime stored,
        usually its digest. Without a `timeout` a pull may take as long as the registry needs."""
        req = api.PullImageRequest(image=api.ImageSpec(image=image), auth=auth, sandbox_config=sandbox_config)
        resp: api.PullImageResponse = await self._call(
            "PullImage", self._images.PullImage, req, timeout if timeout is not None else _NO_DEADLINE
        )
        return resp.image_ref

    async def remove_image(self, image: str, *, timeout: float | None = None) -> None:
        req = api.RemoveImageRequest(image=api.ImageSpec(image=image))
        await self._call("RemoveImage", self._images.RemoveImage, req, timeout)

    async def image_fs_info(self, *, timeout: float | None = None) -> api.ImageFsInfoResponse:
        return await self._call("ImageFsInfo", self._images.ImageFsInfo, api.ImageFsInfoRequest(), timeout)


#: A pull has no deadline of its own (the kubelet and kubeadm cancel it instead); a day stands for "none".
_NO_DEADLINE: Final = 24 * 3600.0
