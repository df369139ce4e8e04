"""The kubelet's runtime boundary (`kubelet.runtimeapi.KubeletRuntime`) served by containerd through `kubelet.cri`:
a Pod driven only through the boundary runs, names its container `containerd://<id>`, and goes away."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from pykubeadm.containerd.daemon import ContainerdProcess
from pykubeadm.cri.endpoint import unix_endpoint
from pykubeadm.cri.errors import CRIUnavailable
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.kubelet.cri import connect
from pykubeadm.kubelet.runtimeapi import KubeletRuntime, container_id_url, parse_container_id_url

from .conftest import BUSYBOX_IMAGE

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]


async def _run_to_completion(runtime: KubeletRuntime, log_dir: Path) -> tuple[str, api.ContainerStatus]:
    """What a pod worker does for a one-container Pod, through the boundary only."""
    sandbox_config = api.PodSandboxConfig(
        metadata=api.PodSandboxMetadata(name="boundary", namespace="default", uid="uid-boundary"),
        log_directory=str(log_dir),
        linux=api.LinuxPodSandboxConfig(
            security_context=api.LinuxSandboxSecurityContext(
                namespace_options=api.NamespaceOption(network=api.NamespaceMode.NODE)
            )
        ),
    )
    if await runtime.image_status(BUSYBOX_IMAGE) is None:
        await runtime.pull_image(BUSYBOX_IMAGE)
    sandbox = await runtime.run_pod_sandbox(sandbox_config)
    try:
        config = api.ContainerConfig(
            metadata=api.ContainerMetadata(name="main"),
            image=api.ImageSpec(image=BUSYBOX_IMAGE),
            command=["sh", "-c", "exit 0"],
            log_path="main/0.log",
        )
        cid = await runtime.create_container(sandbox, config, sandbox_config)
        await runtime.start_container(cid)
        deadline = time.monotonic() + 30
        while (status := await runtime.container_status(cid)).state != api.ContainerState.CONTAINER_EXITED:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        return container_id_url(runtime.runtime_type, cid), status
    finally:
        await runtime.stop_pod_sandbox(sandbox)
        await runtime.remove_pod_sandbox(sandbox)


async def test_a_pod_through_the_boundary_on_containerd(containerd: ContainerdProcess, tmp_path: Path) -> None:
    runtime = await connect(containerd.endpoint)
    try:
        assert runtime.runtime_type == "containerd"
        url, status = await _run_to_completion(runtime, tmp_path)
        assert status.exit_code == 0
        scheme, cid = parse_container_id_url(url)
        assert scheme == "containerd" and status.id == cid
        assert await runtime.list_containers(api.ContainerFilter(id=cid)) == []
    finally:
        await runtime.close()


async def test_connect_fails_with_the_runtimes_message(tmp_path: Path) -> None:
    with pytest.raises(CRIUnavailable, match="code = Unavailable"):
        await connect(unix_endpoint(str(tmp_path / "none.sock")), timeout=2)
