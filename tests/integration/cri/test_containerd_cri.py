"""A Pod's life through CRI on a real containerd (Debian's 1.6 with runc): sandbox, a container that runs and exits,
its CRI log, exec into a running one, and stop/remove leaving nothing. Sandboxes use the node's network namespace
(NamespaceMode.NODE) so no CNI and no address are needed; nothing is given an address."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from pathlib import Path

import pytest

from pykubeadm.cri.client import CRIClient
from pykubeadm.cri.errors import CRINotFound
from pykubeadm.cri.v1 import api_pb2 as api

from .conftest import BUSYBOX_IMAGE

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

#: The CRI log format: `<RFC3339Nano> <stream> <F|P> <line>`.
CRI_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(Z|[+-]\d\d:\d\d) (stdout|stderr) (F|P) (.*)$")


def _sandbox_config(log_dir: Path, name: str) -> api.PodSandboxConfig:
    """A hostNetwork-like sandbox: the node's network and UTS namespaces, so no hostname (as the kubelet does)."""
    uid = str(uuid.uuid4())
    return api.PodSandboxConfig(
        metadata=api.PodSandboxMetadata(name=name, namespace="default", uid=uid, attempt=0),
        log_directory=str(log_dir / f"default_{name}_{uid}"),
        labels={"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default"},
        linux=api.LinuxPodSandboxConfig(
            security_context=api.LinuxSandboxSecurityContext(
                namespace_options=api.NamespaceOption(network=api.NamespaceMode.NODE)
            )
        ),
    )


def _container_config(name: str, command: list[str]) -> api.ContainerConfig:
    return api.ContainerConfig(
        metadata=api.ContainerMetadata(name=name, attempt=0),
        image=api.ImageSpec(image=BUSYBOX_IMAGE),
        command=command,
        log_path=f"{name}/0.log",
        labels={"io.kubernetes.container.name": name},
    )


async def _wait_exited(cri: CRIClient, container_id: str, timeout: float = 30) -> api.ContainerStatus:
    deadline = time.monotonic() + timeout
    while True:
        status = await cri.container_status(container_id)
        if status.state == api.ContainerState.CONTAINER_EXITED:
            return status
        assert time.monotonic() < deadline, f"container {container_id} still {status.state} after {timeout}s"
        await asyncio.sleep(0.05)


async def test_version_names_containerd_and_cri_v1(cri: CRIClient) -> None:
    version = await cri.version()
    assert version.runtime_name == "containerd"
    assert version.runtime_api_version == "v1"
    status = await cri.status()
    ready = {c.type: c.status for c in status.status.conditions}
    assert ready["RuntimeReady"] is True


async def test_the_imported_images_are_there_for_cri(cri: CRIClient) -> None:
    busybox = await cri.image_status(BUSYBOX_IMAGE)
    assert busybox is not None and BUSYBOX_IMAGE in busybox.repo_tags
    assert busybox.id.startswith("sha256:")
    pause = await cri.image_status("registry.k8s.io/pause:3.10")
    assert pause is not None
    info = await cri.status(verbose=True)
    assert '"sandboxImage":"registry.k8s.io/pause:3.10"' in info.info["config"]


async def test_a_container_runs_logs_and_exits_and_stop_remove_leaves_nothing(cri: CRIClient, tmp_path: Path) -> None:
    sandbox_config = _sandbox_config(tmp_path, "hello")
    sandbox = await cri.run_pod_sandbox(sandbox_config)
    sandbox_status = await cri.pod_sandbox_status(sandbox)
    assert sandbox_status.status.state == api.PodSandboxState.SANDBOX_READY

    echo = await cri.create_container(sandbox, _container_config("echo", ["sh", "-c", "echo hi"]), sandbox_config)
    await cri.start_container(echo)
    status = await _wait_exited(cri, echo)
    assert status.exit_code == 0
    assert status.reason == "Completed"
    log = Path(sandbox_config.log_directory, "echo/0.log")
    assert status.log_path == str(log)
    lines = log.read_text().splitlines()
    assert len(lines) == 1, lines
    match = CRI_LOG_LINE.match(lines[0])
    assert match is not None, lines[0]
    assert match.group(2, 3, 4) == ("stdout", "F", "hi")

    failing = await cri.create_container(sandbox, _container_config("fail", ["sh", "-c", "exit 3"]), sandbox_config)
    await cri.start_container(failing)
    assert (await _wait_exited(cri, failing)).exit_code == 3

    sleeper = await cri.create_container(sandbox, _container_config("sleep", ["sleep", "3600"]), sandbox_config)
    await cri.start_container(sleeper)
    assert (await cri.container_status(sleeper)).state == api.ContainerState.CONTAINER_RUNNING
    out = await cri.exec_sync(sleeper, ["sh", "-c", "echo from exec; echo oops >&2; exit 7"], exec_timeout=10)
    assert (out.stdout, out.stderr, out.exit_code) == (b"from exec\n", b"oops\n", 7)
    # The image's files, not the host's: /bin/sh is busybox's applet.
    shell = await cri.exec_sync(sleeper, ["readlink", "/bin/sh"], exec_timeout=10)
    assert shell.stdout == b"/bin/busybox\n"

    listed = await cri.list_containers(api.ContainerFilter(pod_sandbox_id=sandbox))
    assert {c.id for c in listed} == {echo, failing, sleeper}
    assert {c.metadata.name for c in listed} == {"echo", "fail", "sleep"}

    await cri.stop_pod_sandbox(sandbox)
    await cri.remove_pod_sandbox(sandbox)
    assert await cri.list_containers(api.ContainerFilter(pod_sandbox_id=sandbox)) == []
    assert sandbox not in {s.id for s in await cri.list_pod_sandbox()}
    with pytest.raises(CRINotFound, match="code = NotFound"):
        await cri.container_status(sleeper)


async def test_an_unknown_image_fails_with_the_runtimes_message(cri: CRIClient, tmp_path: Path) -> None:
    sandbox_config = _sandbox_config(tmp_path, "noimage")
    sandbox = await cri.run_pod_sandbox(sandbox_config)
    try:
        config = _container_config("x", ["true"])
        config.image.image = "pykubeadm.test/absent:1"
        with pytest.raises(CRINotFound, match=r'code = NotFound desc = .*"pykubeadm\.test/absent:1"'):
            await cri.create_container(sandbox, config, sandbox_config)
    finally:
        await cri.stop_pod_sandbox(sandbox)
        await cri.remove_pod_sandbox(sandbox)
