"""`FakeRuntime`: an in-memory `KubeletRuntime` for unit tests of the kubelet's pod worker, probes and status, kept
honest by the contract tests that run the same calls against containerd (tests/integration/cri/test_runtime_contract.py).

It keeps sandboxes, containers and images as containerd's CRI does (states, filters, NotFound for unknown ids,
idempotent removal), runs nothing, and lets a test decide what runs: `exit(container_id, code)` ends a running
container, `exec_handler` answers ExecSync.
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import grpc

from pykubeadm.cri.errors import CRIError, CRINotFound
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.kubelet.runtimeapi import KubeletRuntime

__all__ = ["FakeRuntime"]

_EXITED = api.ContainerState.CONTAINER_EXITED
_RUNNING = api.ContainerState.CONTAINER_RUNNING
_CREATED = api.ContainerState.CONTAINER_CREATED


def _not_found(method: str, what: str, name: str) -> CRINotFound:
    return CRINotFound(
        method, grpc.StatusCode.NOT_FOUND, f'an error occurred when try to find {what} "{name}": not found'
    )


@dataclass
class _Container:
    status: api.ContainerStatus
    sandbox_id: str


@dataclass
class FakeRuntime:
    """Sandboxes, containers and images in memory; `calls` lists every method called, in order."""

    runtime_type: str = "fake"
    images: dict[str, api.Image] = field(default_factory=dict)
    #: What ExecSync answers: (container id, cmd) → response.
    exec_handler: Callable[[str, Sequence[str]], api.ExecSyncResponse] = lambda _cid, _cmd: api.ExecSyncResponse()
    calls: list[str] = field(default_factory=list)
    _sandboxes: dict[str, api.PodSandboxStatus] = field(default_factory=dict)
    _containers: dict[str, _Container] = field(default_factory=dict)
    _clock: itertools.count[int] = field(default_factory=lambda: itertools.count(time.time_ns()))

    def add_image(self, reference: str, size: int = 1024) -> api.Image:
        image = api.Image(id="sha256:" + secrets.token_hex(32), repo_tags=[reference], size=size)
        self.images[reference] = image
        return image

    def exit(self, container_id: str, exit_code: int, reason: str = "") -> None:
        """The container's process ends with `exit_code`."""
        status = self._container("Exit", container_id).status
        status.state, status.exit_code, status.finished_at = _EXITED, exit_code, next(self._clock)
        status.reason = reason or ("Completed" if exit_code == 0 else "Error")

    def _container(self, method: str, container_id: str) -> _Container:
        found = self._containers.get(container_id)
        if found is None:
            raise _not_found(method, "container", container_id)
        return found

    def _sandbox(self, method: str, sandbox_id: str) -> api.PodSandboxStatus:
        found = self._sandboxes.get(sandbox_id)
        if found is None:
            raise _not_found(method, "sandbox", sandbox_id)
        return found

    async def close(self) -> None:
        self.calls.append("close")

    # --- RuntimeService ----------------------------------------------------------------------------------------------

    async def version(self) -> api.VersionResponse:
        self.calls.append("Version")
        return api.VersionResponse(
            version="0.1.0", runtime_name=self.runtime_type, runtime_version="0", runtime_api_version="v1"
        )

    async def status(self, *, verbose: bool = False) -> api.StatusResponse:
        self.calls.append("Status")
        ready = [
            api.RuntimeCondition(type="RuntimeReady", status=True),
            api.RuntimeCondition(type="NetworkReady", status=True),
        ]
        return api.StatusResponse(status=api.RuntimeStatus(conditions=ready))

    async def run_pod_sandbox(self, config: api.PodSandboxConfig, *, runtime_handler: str = "") -> str:
        self.calls.append("RunPodSandbox")
        sandbox_id = secrets.token_hex(32)
        self._sandboxes[sandbox_id] = api.PodSandboxStatus(
            id=sandbox_id,
            metadata=config.metadata,
            state=api.PodSandboxState.SANDBOX_READY,
            created_at=next(self._clock),
            labels=config.labels,
            annotations=config.annotations,
            runtime_handler=runtime_handler,
        )
        return sandbox_id

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        self.calls.append("StopPodSandbox")
        sandbox = self._sandbox("StopPodSandbox", sandbox_id)
        for c in self._containers.values():
            if c.sandbox_id == sandbox_id and c.status.state == _RUNNING:
                self.exit(c.status.id, 137)
        sandbox.state = api.PodSandboxState.SANDBOX_NOTREADY

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        self.calls.append("RemovePodSandbox")
        sandbox = self._sandboxes.get(sandbox_id)
        if sandbox is None:
            return
        if sandbox.state == api.PodSandboxState.SANDBOX_READY:  # containerd stops a ready sandbox first
            await self.stop_pod_sandbox(sandbox_id)
        for cid in [cid for cid, c in self._containers.items() if c.sandbox_id == sandbox_id]:
            del self._containers[cid]
        del self._sandboxes[sandbox_id]

    async def pod_sandbox_status(self, sandbox_id: str, *, verbose: bool = False) -> api.PodSandboxStatusResponse:
        self.calls.append("PodSandboxStatus")
        return api.PodSandboxStatusResponse(status=self._sandbox("PodSandboxStatus", sandbox_id))

    async def list_pod_sandbox(self, filter: api.PodSandboxFilter | None = None) -> Sequence[api.PodSandbox]:
        self.calls.append("ListPodSandbox")
        f = filter or api.PodSandboxFilter()
        return [
            api.PodSandbox(
                id=s.id,
                metadata=s.metadata,
                state=s.state,
                created_at=s.created_at,
                labels=s.labels,
                annotations=s.annotations,
                runtime_handler=s.runtime_handler,
            )
            for s in self._sandboxes.values()
            if (not f.id or s.id == f.id)
            and (not f.HasField("state") or s.state == f.state.state)
            and all(s.labels.get(k) == v for k, v in f.label_selector.items())
        ]

    async def create_container(
        self, sandbox_id: str, config: api.ContainerConfig, sandbox_config: api.PodSandboxConfig
    ) -> str:
        self.calls.append("CreateContainer")
        sandbox = self._sandbox("CreateContainer", sandbox_id)
        image = self._image(config.image.image)
        if image is None:
            raise _not_found("CreateContainer", "image", config.image.image)
        container_id = secrets.token_hex(32)
        self._containers[container_id] = _Container(
            api.ContainerStatus(
                id=container_id,
                metadata=config.metadata,
                state=_CREATED,
                created_at=next(self._clock),
                image=config.image,
                image_ref=image.id,
                labels=config.labels,
                annotations=config.annotations,
                log_path=f"{sandbox_config.log_directory}/{config.log_path}" if config.log_path else "",
            ),
            sandbox.id,
        )
        return container_id

    async def start_container(self, container_id: str) -> None:
        self.calls.append("StartContainer")
        status = self._container("StartContainer", container_id).status
        if status.state != _CREATED:
            raise CRIError("StartContainer", grpc.StatusCode.UNKNOWN, f'container "{container_id}" is not created')
        status.state, status.started_at = _RUNNING, next(self._clock)

    async def stop_container(self, container_id: str, grace_seconds: int) -> None:
        self.calls.append("StopContainer")
        if self._container("StopContainer", container_id).status.state == _RUNNING:
            self.exit(container_id, 137)

    async def remove_container(self, container_id: str) -> None:
        self.calls.append("RemoveContainer")
        self._containers.pop(container_id, None)

    async def list_containers(self, filter: api.ContainerFilter | None = None) -> Sequence[api.Container]:
        self.calls.append("ListContainers")
        f = filter or api.ContainerFilter()
        return [
            api.Container(
                id=c.status.id,
                pod_sandbox_id=c.sandbox_id,
                metadata=c.status.metadata,
                image=c.status.image,
                image_ref=c.status.image_ref,
                state=c.status.state,
                created_at=c.status.created_at,
                labels=c.status.labels,
                annotations=c.status.annotations,
            )
            for c in self._containers.values()
            if (not f.id or c.status.id == f.id)
            and (not f.pod_sandbox_id or c.sandbox_id == f.pod_sandbox_id)
            and (not f.HasField("state") or c.status.state == f.state.state)
            and all(c.status.labels.get(k) == v for k, v in f.label_selector.items())
        ]

    async def container_status(self, container_id: str, *, verbose: bool = False) -> api.ContainerStatus:
        self.calls.append("ContainerStatus")
        return self._container("ContainerStatus", container_id).status

    async def reopen_container_log(self, container_id: str) -> None:
        self.calls.append("ReopenContainerLog")
        self._container("ReopenContainerLog", container_id)

    async def exec_sync(self, container_id: str, cmd: Sequence[str], *, exec_timeout: int = 0) -> api.ExecSyncResponse:
        self.calls.append("ExecSync")
        if self._container("ExecSync", container_id).status.state != _RUNNING:
            raise CRIError("ExecSync", grpc.StatusCode.UNKNOWN, f'container "{container_id}" is not running')
        return self.exec_handler(container_id, cmd)

    async def exec(self, request: api.ExecRequest) -> str:
        self.calls.append("Exec")
        self._container("Exec", request.container_id)
        return f"http://127.0.0.1:0/exec/{secrets.token_urlsafe(6)}"

    async def attach(self, request: api.AttachRequest) -> str:
        self.calls.append("Attach")
        self._container("Attach", request.container_id)
        return f"http://127.0.0.1:0/attach/{secrets.token_urlsafe(6)}"

    async def port_forward(self, sandbox_id: str, ports: Sequence[int]) -> str:
        self.calls.append("PortForward")
        self._sandbox("PortForward", sandbox_id)
        return f"http://127.0.0.1:0/portforward/{secrets.token_urlsafe(6)}"

    async def container_stats(self, container_id: str) -> api.ContainerStats:
        self.calls.append("ContainerStats")
        c = self._container("ContainerStats", container_id)
        return api.ContainerStats(attributes=api.ContainerAttributes(id=c.status.id, metadata=c.status.metadata))

    async def list_container_stats(
        self, filter: api.ContainerStatsFilter | None = None
    ) -> Sequence[api.ContainerStats]:
        self.calls.append("ListContainerStats")
        return [await self.container_stats(cid) for cid in list(self._containers)]

    # --- ImageService ------------------------------------------------------------------------------------------------

    async def list_images(self, filter: api.ImageFilter | None = None) -> Sequence[api.Image]:
        self.calls.append("ListImages")
        return list(self.images.values())

    def _image(self, ref: str) -> api.Image | None:
        """An image by reference or ID (the kubelet creates containers from the image's ID, as containerd takes)."""
        return self.images.get(ref) or next((i for i in self.images.values() if i.id == ref), None)

    async def image_status(self, image: str) -> api.Image | None:
        self.calls.append("ImageStatus")
        return self._image(image)

    async def pull_image(
        self, image: str, *, auth: api.AuthConfig | None = None, sandbox_config: api.PodSandboxConfig | None = None
    ) -> str:
        self.calls.append("PullImage")
        return (self.images.get(image) or self.add_image(image)).id

    async def remove_image(self, image: str) -> None:
        self.calls.append("RemoveImage")
        found = self._image(image)  # by reference or ID; every reference of the image goes, as containerd's
        for ref in [r for r, i in self.images.items() if found is not None and i.id == found.id]:
            del self.images[ref]

    async def image_fs_info(self) -> api.ImageFsInfoResponse:
        self.calls.append("ImageFsInfo")
        return api.ImageFsInfoResponse()


# The fake serves the whole boundary (checked by mypy, as CRIRuntime is).
_: type[KubeletRuntime] = FakeRuntime
