"""kubeadm's side of CRI against a real containerd: the CRI preflight check asks the runtime and fails in kubeadm's
words when it does not answer; `config images pull` pulls every image of `config images list` through CRI from
the --image-repository (a local docker-registry on 127.0.0.1); reset's Pod removal empties the runtime."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import run_pykubeadm

from pykubeadm.containerd.config import write_registry_hosts
from pykubeadm.containerd.daemon import ContainerdProcess
from pykubeadm.cri.client import CRIClient
from pykubeadm.cri.endpoint import unix_endpoint
from pykubeadm.cri.kubeadmruntime import ContainerRuntime
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.preflight import RealHost
from pykubeadm.preflight.checks import ContainerRuntimeCheck
from pykubeadm.testing.images import write_busybox_image
from pykubeadm.testing.registry import LocalRegistry, registry_skip_reason

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

VERSION = "v1.33.0"


def _images_pull(repo: str, endpoint: str) -> subprocess.CompletedProcess[str]:
    return run_pykubeadm(
        "config",
        "images",
        "pull",
        "--kubernetes-version",
        VERSION,
        "--image-repository",
        repo,
        "--cri-socket",
        endpoint,
    )


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistry]:
    reason = registry_skip_reason()
    if reason:
        pytest.skip(reason)
    reg = LocalRegistry(tmp_path_factory.mktemp("registry"))
    reg.start()
    try:
        yield reg
    finally:
        reg.stop()


async def test_the_cri_check_passes_when_the_runtime_answers(containerd: ContainerdProcess) -> None:
    assert ContainerRuntimeCheck(RealHost(), containerd.endpoint).check() == ([], [])


async def test_the_cri_check_fails_in_kubeadms_words_without_a_runtime(tmp_path: Path) -> None:
    endpoint = unix_endpoint(str(tmp_path / "containerd.sock"))
    warnings, errors = ContainerRuntimeCheck(RealHost(), endpoint).check()
    assert warnings == []
    (error,) = errors
    assert error.startswith("container runtime is not running: rpc error: code = Unavailable desc = "), error
    assert str(tmp_path / "containerd.sock") in error


async def test_the_runtime_reports_kubeadms_pause_as_its_sandbox_image(containerd: ContainerdProcess) -> None:
    assert ContainerRuntime(containerd.endpoint).sandbox_image() == "registry.k8s.io/pause:3.10"


async def test_config_images_pull_pulls_every_image_through_cri(
    containerd: ContainerdProcess, registry: LocalRegistry, tmp_path: Path
) -> None:
    listed = run_pykubeadm(
        "config", "images", "list", "--kubernetes-version", VERSION, "--image-repository", registry.host, "-o", "json"
    )
    assert listed.returncode == 0, listed.stderr
    wanted = json.loads(listed.stdout)["images"]
    archive = write_busybox_image(tmp_path / "busybox.tar", "pykubeadm.test/busybox:1.35")
    for image in wanted:
        registry.push(archive, image.removeprefix(registry.host + "/"))
    write_registry_hosts(containerd.cfg.layout, registry.host, f"http://{registry.host}")

    pulled = _images_pull(registry.host, containerd.endpoint)
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.splitlines() == [f"[config/images] Pulled {image}" for image in wanted]
    async with CRIClient(containerd.endpoint) as cri:
        for image in wanted:
            status = await cri.image_status(image)
            assert status is not None and image in status.repo_tags, image


async def test_config_images_pull_fails_with_the_runtimes_message(containerd: ContainerdProcess) -> None:
    # A closed loopback port: the pull fails at once, after kubeadm's retries, with containerd's reason.
    from pykubeadm.testing.etcd import free_port

    repo = f"127.0.0.1:{free_port()}"
    res = _images_pull(repo, containerd.endpoint)
    assert res.returncode == 1
    image = f"{repo}/kube-apiserver:{VERSION}"
    assert f'failed to pull image "{image}": failed to pull image {image}: rpc error: code = ' in res.stderr
    assert "connection refused" in res.stderr
    assert res.stdout == ""


async def test_resets_pod_removal_leaves_the_runtime_empty(containerd: ContainerdProcess, tmp_path: Path) -> None:
    async with CRIClient(containerd.endpoint) as cri:
        for name in ("a", "b"):
            await cri.run_pod_sandbox(
                api.PodSandboxConfig(
                    metadata=api.PodSandboxMetadata(name=name, namespace="default", uid=f"uid-{name}"),
                    log_directory=str(tmp_path / name),
                    linux=api.LinuxPodSandboxConfig(
                        security_context=api.LinuxSandboxSecurityContext(
                            namespace_options=api.NamespaceOption(network=api.NamespaceMode.NODE)
                        )
                    ),
                )
            )
    runtime = ContainerRuntime(containerd.endpoint, timeout=30)
    assert len(runtime.list_kube_containers()) == 2
    runtime.remove_containers(runtime.list_kube_containers())
    assert runtime.list_kube_containers() == []
