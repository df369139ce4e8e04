"""pykubeadm.client against our apiserver: kubeadm-style kubeconfigs (embedded data, token), create-or-update, waits."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import create_token, embedded_kubeconfig
from lightkube import ApiError, Client
from lightkube.resources.core_v1 import ConfigMap, Node
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding

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

GET_NODES = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}


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


class CountingGets:
    """Counts a sync client's GETs (the waits' polls) and signals the first one answered."""

    def __init__(self, client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.first = threading.Event()
        get = client.get

        def counting_get(*args: Any, **kwargs: Any) -> Any:
            try:
                return get(*args, **kwargs)
            finally:
                self.count += 1
                self.first.set()

        monkeypatch.setattr(client, "get", counting_get)


def after_first_get(gets: CountingGets, action: Callable[[], object]) -> tuple[threading.Thread, list[float]]:
    """Run `action` in a thread once the wait's first GET was answered; its end time goes into the list."""
    done: list[float] = []

    def run() -> None:
        if gets.first.wait(10):
            action()
            done.append(time.monotonic())

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done


@pytest.fixture
def admin(api: ApiServer) -> Iterator[Client]:
    with sync_client(api.kubeconfig()) as client:
        yield client


@pytest.fixture
def client(api: ApiServer) -> Iterator[Client]:
    """The waiting client (the admin too, another connection pool)."""
    with sync_client(api.kubeconfig()) as client:
        yield client


def test_wait_for_sync_watches_for_the_object_to_appear(
    admin: Client, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    gets = CountingGets(client, monkeypatch)
    thread, created = after_first_get(gets, lambda: admin.create(Node.from_dict({"metadata": {"name": "watched"}})))
    try:
        node = wait_for_sync(client, Node, "watched", lambda o: True, timeout=20, interval=5)
        returned = time.monotonic()
    finally:
        thread.join()
    assert node.metadata.name == "watched"
    assert returned - created[0] < 2.0  # seen by the watch, not by a GET after a 5 s sleep
    assert gets.count == 1


def test_wait_for_sync_sees_a_later_change(admin: Client, client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    admin.create(Node.from_dict({"metadata": {"name": "labelled-later"}}))
    gets = CountingGets(client, monkeypatch)
    patch = {"metadata": {"labels": {"ready": "yes"}}}
    thread, patched = after_first_get(gets, lambda: admin.patch(Node, "labelled-later", patch))
    try:
        node = wait_for_sync(
            client,
            Node,
            "labelled-later",
            lambda o: (o.metadata.labels or {}).get("ready") == "yes",
            timeout=20,
            interval=5,
        )
        returned = time.monotonic()
    finally:
        thread.join()
    assert node.metadata.labels["ready"] == "yes"
    assert returned - patched[0] < 2.0
    assert gets.count == 1


def test_wait_for_sync_times_out_at_the_deadline(client: Client) -> None:
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"timed out waiting for Node never-there: nodes \"never-there\" not found"):
        wait_for_sync(client, Node, "never-there", lambda o: True, timeout=1.5, interval=5)
    assert 1.5 <= time.monotonic() - start < 1.5 + 1.5  # the watch ends at the deadline: no 5 s sleep after it


async def test_async_wait_for_watches_and_times_out(api: ApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    client = async_client(api.kubeconfig())
    try:
        gets: list[str] = []
        first_get = asyncio.Event()
        get = client.get

        async def counting_get(*args: Any, **kwargs: Any) -> Any:
            try:
                return await get(*args, **kwargs)
            finally:
                gets.append(args[1])
                first_get.set()

        monkeypatch.setattr(client, "get", counting_get)
        created: list[float] = []

        async def create_after_first_get() -> None:
            await first_get.wait()
            await client.create(Node.from_dict({"metadata": {"name": "async-watched"}}))
            created.append(time.monotonic())

        task = asyncio.create_task(create_after_first_get())
        try:
            node = await wait_for(client, Node, "async-watched", lambda o: True, timeout=20, interval=5)
            returned = time.monotonic()
        finally:
            await asyncio.wait_for(task, 10)
        assert node.metadata.name == "async-watched"
        assert returned - created[0] < 2.0
        assert gets == ["async-watched"]

        start = time.monotonic()
        with pytest.raises(TimeoutError, match="timed out waiting for Node async-never"):
            await wait_for(client, Node, "async-never", lambda o: True, timeout=1.2, interval=5)
        assert 1.2 <= time.monotonic() - start < 1.2 + 1.0
    finally:
        await client.close()


def test_wait_for_sync_polls_when_the_identity_may_get_but_not_watch(
    api: ApiServer, admin: Client, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    admin.create(ClusterRole.from_dict({"metadata": {"name": "node-getter"}, "rules": [GET_NODES]}))
    admin.create(
        ClusterRoleBinding.from_dict(
            {
                "metadata": {"name": "node-getter"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-getter"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "node-getter"}],
            }
        )
    )
    with sync_client(api.kubeconfig_for("node-getter")) as client:
        with pytest.raises(ApiError) as not_yet:
            client.get(Node, "polled")
        assert not_yet.value.status.code == 404  # may GET (a watch is refused: see the log below)
        gets = CountingGets(client, monkeypatch)
        caplog.set_level(logging.DEBUG, logger="pykubeadm.client")
        thread, _ = after_first_get(gets, lambda: admin.create(Node.from_dict({"metadata": {"name": "polled"}})))
        try:
            node = wait_for_sync(client, Node, "polled", lambda o: True, timeout=20, interval=0.05)
        finally:
            thread.join()
    assert node.metadata.name == "polled"
    assert gets.count > 1
    assert "cannot watch Node polled" in caplog.text and "forbidden" in caplog.text


def test_bad_kubeconfig_is_a_kubeconfig_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match=r"missing\.conf"):
        load_kubeconfig(tmp_path / "missing.conf")
    (tmp_path / "bad.conf").write_text("clusters: 5\n")
    with pytest.raises(KubeconfigError, match=r"bad\.conf"):
        load_kubeconfig(tmp_path / "bad.conf")
