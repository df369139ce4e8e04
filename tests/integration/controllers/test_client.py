"""pykubeadm.client against our apiserver: kubeadm-style kubeconfigs (embedded data, token), create-or-update, waits."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from harness import create_token, embedded_kubeconfig
from lightkube import ApiError
from lightkube.resources.core_v1 import ConfigMap, Node

from pykubeadm.client import (
    async_client,
    create_or_update,
    create_or_update_sync,
    load_kubeconfig,
    sync_client,
    wait_for,
    wait_for_sync,
)
from pykubeadm.errors import KubeconfigError
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration


def cm(value: str) -> ConfigMap:
    return ConfigMap.from_dict({"metadata": {"name": "settings", "namespace": "default"}, "data": {"k": value}})


def test_embedded_cert_kubeconfig_and_create_or_update_sync(api: ApiServer, tmp_path: Path) -> None:
    cert, key = api.pki.sign("kubernetes-admin", ["system:masters"], name="admin2")
    client = sync_client(embedded_kubeconfig(api, tmp_path / "admin.conf", "kubernetes-admin", cert=cert, key=key))
    first = create_or_update_sync(client, cm("1"))
    second = create_or_update_sync(client, cm("2"))
    assert second.metadata.uid == first.metadata.uid
    assert client.get(ConfigMap, "settings", namespace="default").data == {"k": "2"}


def test_token_kubeconfig_identity(api: ApiServer, tmp_path: Path) -> None:
    tid, secret = create_token(api)
    client = sync_client(
        embedded_kubeconfig(api, tmp_path / "bootstrap.conf", "tls-bootstrap-token-user", token=f"{tid}.{secret}")
    )
    with pytest.raises(ApiError) as err:
        client.get(ConfigMap, "settings", namespace="default")
    assert err.value.status.code == 403
    assert f"system:bootstrap:{tid}" in err.value.status.message


async def test_async_create_or_update_and_wait_for(api: ApiServer) -> None:
    client = async_client(api.kubeconfig())
    try:
        await create_or_update(client, cm("a"))
        await create_or_update(client, cm("b"))
        got = await wait_for(
            client, ConfigMap, "settings", lambda o: o.data == {"k": "b"}, namespace="default", timeout=5
        )
        assert got.data == {"k": "b"}

        async def later() -> None:
            await asyncio.sleep(0.3)
            await client.create(Node.from_dict({"metadata": {"name": "appears-later"}}))

        task = asyncio.create_task(later())
        node = await wait_for(client, Node, "appears-later", lambda o: True, timeout=5, interval=0.05)
        await task
        assert node.metadata.name == "appears-later"
        with pytest.raises(TimeoutError, match="timed out waiting for ConfigMap settings"):
            await wait_for(
                client, ConfigMap, "settings", lambda o: False, namespace="default", timeout=0.3, interval=0.1
            )
    finally:
        await client.close()


def test_wait_for_sync(api: ApiServer) -> None:
    client = sync_client(api.kubeconfig())
    threading.Timer(0.3, lambda: client.create(Node.from_dict({"metadata": {"name": "sync-later"}}))).start()
    start = time.monotonic()
    assert wait_for_sync(client, Node, "sync-later", lambda o: True, timeout=5, interval=0.05).metadata.name
    assert time.monotonic() - start < 3


def test_bad_kubeconfig_is_a_kubeconfig_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match=r"missing\.conf"):
        load_kubeconfig(tmp_path / "missing.conf")
    (tmp_path / "bad.conf").write_text("clusters: 5\n")
    with pytest.raises(KubeconfigError, match=r"bad\.conf"):
        load_kubeconfig(tmp_path / "bad.conf")
