"""Fixtures for the storage suite: every conformance test runs once per engine (SQLite in tmp_path, a real etcd)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from pykubeadm.storage import open_store
from pykubeadm.storage.interface import Store
from pykubeadm.testing.etcd import EtcdCluster, etcd_available

ENGINES = ["sqlite", "etcd"]


def _need_etcd() -> None:
    if not etcd_available():
        pytest.skip("etcd binary not installed (scripts/setup.sh installs etcd-server)")


@pytest.fixture(scope="session")
def shared_etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    """One etcd member shared by the conformance tests (each test works under its own key prefix)."""
    _need_etcd()
    with EtcdCluster(tmp_path_factory.mktemp("etcd-shared"), 1) as cluster:
        yield cluster


class Backend:
    """One engine with its own data: `url`, `open()`, and `restart()`/`kill()` of the etcd processes (no-ops for
    SQLite, whose store lives in the test process)."""

    def __init__(self, name: str, url: str, cluster: EtcdCluster | None):
        self.name, self.url, self.cluster = name, url, cluster

    async def open(self) -> Store:
        return await open_store(self.url, connect_timeout=15)

    def restart(self, *, kill: bool = False) -> None:
        if self.cluster is None:
            return
        for m in self.cluster.members:
            m.kill() if kill else m.stop()
        for m in self.cluster.members:
            m.start()
        self.cluster.wait_healthy(30)


@pytest.fixture(params=ENGINES)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """A fresh engine per test (a dedicated etcd process for etcd)."""
    if request.param == "sqlite":
        yield Backend("sqlite", f"sqlite://{tmp_path}/state.db", None)
        return
    _need_etcd()
    with EtcdCluster(tmp_path / "etcd", 1) as cluster:
        yield Backend("etcd", cluster.url, cluster)


@pytest.fixture(params=ENGINES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        s = await open_store(f"sqlite://{tmp_path}/state.db")
    else:
        s = await open_store(request.getfixturevalue("shared_etcd").url)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
def ns() -> str:
    """A key prefix of this test's own, in kube-apiserver's layout."""
    return f"/registry/t{uuid.uuid4().hex[:10]}/"
