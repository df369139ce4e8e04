"""Pulling from a registry that wants credentials (docker-registry with htpasswd on 127.0.0.1): without them the
runtime's error carries the registry's 401; with CRI AuthConfig the pull succeeds."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykubeadm.containerd.config import write_registry_hosts
from pykubeadm.containerd.daemon import ContainerdProcess
from pykubeadm.cri.client import CRIClient
from pykubeadm.cri.errors import CRIError
from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.testing.images import write_busybox_image
from pykubeadm.testing.registry import LocalRegistry, registry_skip_reason

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

USER = "puller"
PASSWORD = secrets.token_urlsafe(12)


@pytest.fixture(scope="module")
def private_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistry]:
    reason = registry_skip_reason(auth=True)
    if reason:
        pytest.skip(reason)
    reg = LocalRegistry(tmp_path_factory.mktemp("private"), users={USER: PASSWORD})
    reg.start()
    try:
        yield reg
    finally:
        reg.stop()


async def test_a_private_image_needs_the_pull_secret(
    containerd: ContainerdProcess, private_registry: LocalRegistry, tmp_path: Path
) -> None:
    image = private_registry.push(write_busybox_image(tmp_path / "b.tar", "x/busybox:1"), "team/busybox:1.35")
    write_registry_hosts(containerd.cfg.layout, private_registry.host, f"http://{private_registry.host}")
    async with CRIClient(containerd.endpoint) as cri:
        with pytest.raises(CRIError) as caught:
            await cri.pull_image(image)
        assert "401 Unauthorized" in str(caught.value)
        assert await cri.image_status(image) is None

        ref = await cri.pull_image(image, auth=api.AuthConfig(username=USER, password=PASSWORD))
        assert ref.startswith("sha256:")
        status = await cri.image_status(image)
        assert status is not None and status.id == ref
