"""A real containerd per test module (its own root, state and socket under a tmp dir, kubeadm's pause image built
and imported offline), and the busybox test image imported into it. Skipped with the reason where containerd cannot
run (not root, containerd/runc/busybox-static missing); torn down through CRI (every sandbox stopped and removed)
before containerd is stopped, since Pod shims outlive containerd."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from pykubeadm.containerd.config import ContainerdConfig
from pykubeadm.containerd.daemon import ContainerdProcess, remove_all_pods
from pykubeadm.containerd.images import import_archive, preload_pause_image
from pykubeadm.cri.client import CRIClient
from pykubeadm.layout import Layout
from pykubeadm.testing.apiserver import ApiServer, running_apiserver
from pykubeadm.testing.images import BUSYBOX, write_busybox_image

BUSYBOX_IMAGE = "pykubeadm.test/busybox:1.35"


def containerd_skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "containerd needs root (runc, mounts, cgroups)"
    for tool in ("containerd", "ctr", "runc"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} is not installed (Debian: containerd, runc)"
    if not BUSYBOX.is_file():
        return "Debian's busybox-static is not installed (the test image is built from it)"
    return None


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def containerd(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ContainerdProcess]:
    reason = containerd_skip_reason()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("ctd")
    cfg = ContainerdConfig(Layout(root))
    daemon = ContainerdProcess(cfg)
    await daemon.start()
    try:
        preload_pause_image(cfg, root / "native-cache")
        import_archive(cfg, write_busybox_image(root / "busybox.oci.tar", BUSYBOX_IMAGE))
        yield daemon
    finally:
        try:
            async with CRIClient(daemon.endpoint, timeout=60) as cri:
                await remove_all_pods(cri)
        finally:
            daemon.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def cri(containerd: ContainerdProcess) -> AsyncIterator[CRIClient]:
    async with CRIClient(containerd.endpoint, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """A real apiserver per test module (free loopback port), with the default ServiceAccount Pods need."""
    with running_apiserver(tmp_path_factory.mktemp("apiserver")) as server:
        server.kubectl(
            "apply",
            "-f",
            "-",
            input="{apiVersion: v1, kind: ServiceAccount, metadata: {name: default, namespace: default}}",
        )
        yield server
