"""One contract for the kubelet's runtime boundary, run against containerd (through `kubelet.cri.CRIRuntime`) and
against `kubelet.cri.fake.FakeRuntime`, so the fake the kubelet's unit tests use behaves as the real runtime does:
states, filters, NotFound for unknown ids, idempotent removals, stop ending running containers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from pykubeadm.cri.errors import CRIError, CRINotFound
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.kubelet.cri import connect
from pykubeadm.kubelet.cri.fake import FakeRuntime
from pykubeadm.kubelet.runtimeapi import KubeletRuntime

from .conftest import BUSYBOX_IMAGE

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

UNKNOWN = "0" * 64


@pytest.fixture(params=["containerd", "fake"])
def endpoint(request: pytest.FixtureRequest) -> str | None:
    """containerd's endpoint, or None for the fake."""
    return request.getfixturevalue("containerd").endpoint if request.param == "containerd" else None


@pytest_asyncio.fixture(loop_scope="module")
async def runtime(endpoint: str | None) -> AsyncIterator[KubeletRuntime]:
    if endpoint is None:
        fake = FakeRuntime()
        fake.add_image(BUSYBOX_IMAGE)
        yield fake
        return
    real = await connect(endpoint, timeout=60)
    try:
        yield real
    finally:
        await real.close()


def _sandbox_config(tmp_path: Path, name: str, labels: dict[str, str] | None = None) -> api.PodSandboxConfig:
    return api.PodSandboxConfig(
        metadata=api.PodSandboxMetadata(name=name, namespace="contract", uid=f"uid-{name}"),
        log_directory=str(tmp_path / name),
        labels=labels or {},
        linux=api.LinuxPodSandboxConfig(
            security_context=api.LinuxSandboxSecurityContext(
                namespace_options=api.NamespaceOption(network=api.NamespaceMode.NODE)
            )
        ),
    )


def _container(name: str, labels: dict[str, str] | None = None) -> api.ContainerConfig:
    return api.ContainerConfig(
        metadata=api.ContainerMetadata(name=name),
        image=api.ImageSpec(image=BUSYBOX_IMAGE),
        command=["sleep", "3600"],
        log_path=f"{name}/0.log",
        labels=labels or {},
    )


async def _wait_state(runtime: KubeletRuntime, cid: str, state: int, timeout: float = 30) -> api.ContainerStatus:
    deadline = time.monotonic() + timeout
    while (status := await runtime.container_status(cid)).state != state:
        assert time.monotonic() < deadline, f"{cid} is {status.state}, not {state}"
        await asyncio.sleep(0.05)
    return status


async def test_lifecycle_states_and_filters(runtime: KubeletRuntime, tmp_path: Path) -> None:
    config = _sandbox_config(tmp_path, "life", {"app": "web"})
    sandbox = await runtime.run_pod_sandbox(config)
    assert (await runtime.pod_sandbox_status(sandbox)).status.state == api.PodSandboxState.SANDBOX_READY
    assert [s.id for s in await runtime.list_pod_sandbox(api.PodSandboxFilter(label_selector={"app": "web"}))] == [
        sandbox
    ]
    assert await runtime.list_pod_sandbox(api.PodSandboxFilter(label_selector={"app": "other"})) == []

    cid = await runtime.create_container(sandbox, _container("main", {"role": "main"}), config)
    status = await runtime.container_status(cid)
    assert status.state == api.ContainerState.CONTAINER_CREATED
    assert status.metadata.name == "main"
    assert status.log_path == f"{config.log_directory}/main/0.log"
    await runtime.start_container(cid)
    await _wait_state(runtime, cid, api.ContainerState.CONTAINER_RUNNING)
    running = api.ContainerFilter(state=api.ContainerStateValue(state=api.ContainerState.CONTAINER_RUNNING))
    assert cid in {c.id for c in await runtime.list_containers(running)}
    assert [c.id for c in await runtime.list_containers(api.ContainerFilter(label_selector={"role": "main"}))] == [cid]

    # Stopping the sandbox ends its containers.
    await runtime.stop_pod_sandbox(sandbox)
    assert (await runtime.pod_sandbox_status(sandbox)).status.state == api.PodSandboxState.SANDBOX_NOTREADY
    assert (await _wait_state(runtime, cid, api.ContainerState.CONTAINER_EXITED)).exit_code != 0
    await runtime.remove_pod_sandbox(sandbox)
    assert await runtime.list_containers(api.ContainerFilter(pod_sandbox_id=sandbox)) == []
    assert sandbox not in {s.id for s in await runtime.list_pod_sandbox()}


async def test_removing_a_ready_sandbox_stops_and_removes_everything(runtime: KubeletRuntime, tmp_path: Path) -> None:
    config = _sandbox_config(tmp_path, "ready")
    sandbox = await runtime.run_pod_sandbox(config)
    cid = await runtime.create_container(sandbox, _container("main"), config)
    await runtime.start_container(cid)
    await runtime.remove_pod_sandbox(sandbox)
    assert await runtime.list_containers(api.ContainerFilter(pod_sandbox_id=sandbox)) == []
    with pytest.raises(CRINotFound):
        await runtime.container_status(cid)


async def test_unknown_ids_are_not_found_and_removal_is_idempotent(runtime: KubeletRuntime, tmp_path: Path) -> None:
    with pytest.raises(CRINotFound):
        await runtime.container_status(UNKNOWN)
    with pytest.raises(CRINotFound):
        await runtime.pod_sandbox_status(UNKNOWN)
    with pytest.raises(CRINotFound):
        await runtime.start_container(UNKNOWN)
    await runtime.remove_container(UNKNOWN)
    await runtime.remove_pod_sandbox(UNKNOWN)


async def test_a_missing_image_is_not_found_and_exec_needs_a_running_container(
    runtime: KubeletRuntime, tmp_path: Path
) -> None:
    config = _sandbox_config(tmp_path, "img")
    sandbox = await runtime.run_pod_sandbox(config)
    try:
        missing = _container("x")
        missing.image.image = "pykubeadm.test/absent:1"
        with pytest.raises(CRINotFound):
            await runtime.create_container(sandbox, missing, config)
        cid = await runtime.create_container(sandbox, _container("idle"), config)
        with pytest.raises(CRIError):
            await runtime.exec_sync(cid, ["true"], exec_timeout=5)
        assert await runtime.image_status(BUSYBOX_IMAGE) is not None
        assert await runtime.image_status("pykubeadm.test/absent:1") is None
    finally:
        await runtime.stop_pod_sandbox(sandbox)
        await runtime.remove_pod_sandbox(sandbox)
