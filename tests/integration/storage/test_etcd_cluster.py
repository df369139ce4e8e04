"""The etcd engine against real multi-member and TLS etcd: a member failure keeps reads, writes and open watches
working; client-certificate TLS as kube-apiserver uses it (--etcd-cafile/--etcd-certfile/--etcd-keyfile)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from tests.integration.storage.storage_certs import make_pki

from pykubeadm.storage import open_store
from pykubeadm.storage.interface import Event, StoreUnavailableError
from pykubeadm.testing.etcd import EtcdCluster, EtcdTLS, etcd_available

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(90),
    pytest.mark.skipif(not etcd_available(), reason="etcd binary not installed"),
]


async def _until(pred, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_three_members_any_one_down(tmp_path: Path) -> None:
    ns = "/registry/configmaps/ha/"
    with EtcdCluster(tmp_path / "etcd", 3) as cluster:
        store = await open_store(cluster.url)
        events: list[Event] = []
        start = await store.current_revision() + 1

        async def watch() -> None:
            async for ev in store.watch(ns, start):
                events.append(ev)

        watcher = asyncio.create_task(watch())
        written = []
        try:
            for i, member in enumerate(cluster.members):
                (member.kill if i == 0 else member.stop)()  # a crash, then two clean stops
                kv = await store.create(f"{ns}m{i}", b"0")
                for n in range(1, 6):
                    kv = await store.update(kv.key, str(n).encode(), kv.mod_revision)
                assert (await store.get(kv.key)) == kv
                assert [x.key for x in (await store.list(ns)).items] == [f"{ns}m{j}" for j in range(i + 1)]
                written.append(kv.mod_revision)
                await _until(lambda rev=kv.mod_revision: events and events[-1].revision >= rev, 20, f"watch m{i}")
                member.start()
                await asyncio.to_thread(member.wait_healthy, 30)
            assert not watcher.done()
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            await store.close()
        revs = [e.revision for e in events]
        assert revs == sorted(set(revs)), "watch delivered out of order or twice"
        assert len(events) == 3 * 6
        assert [e.type for e in events[:6]] == ["ADDED"] + ["MODIFIED"] * 5


async def test_tls_with_client_certificates(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki", ["127.0.0.1"])
    tls = EtcdTLS(pki["ca"], pki["server"], pki["server_key"], client_cert_auth=True, peer=True)
    with EtcdCluster(tmp_path / "etcd", 1, tls=tls) as cluster:
        assert cluster.url.startswith("https://127.0.0.1:")
        store = await open_store(cluster.url, ca_file=pki["ca"], cert_file=pki["client"], key_file=pki["client_key"])
        try:
            kv = await store.create("/registry/secrets/kube-system/s", b"{}")
            assert (await store.get(kv.key)) == kv
        finally:
            await store.close()

        with pytest.raises(StoreUnavailableError) as no_cert:  # the server requires a client certificate
            await open_store(cluster.url, ca_file=pki["ca"], connect_timeout=1)
        assert cluster.endpoints[0].removeprefix("https://") in str(no_cert.value)
        with pytest.raises(StoreUnavailableError):  # the server certificate is not signed by this CA
            await open_store(
                cluster.url,
                ca_file=pki["other_ca"],
                cert_file=pki["client"],
                key_file=pki["client_key"],
                connect_timeout=1,
            )


async def test_hung_member_fails_over(tmp_path: Path) -> None:
    """A member that stops answering (SIGSTOP) instead of closing its connections: calls time out and move on,
    the open watch notices through gRPC keepalive and resumes on another member."""
    ns = "/registry/leases/hung/"
    with EtcdCluster(tmp_path / "etcd", 3) as cluster:
        store = await open_store(cluster.url)
        events: list[Event] = []
        start = await store.current_revision() + 1

        async def watch() -> None:
            async for ev in store.watch(ns, start):
                events.append(ev)

        watcher = asyncio.create_task(watch())
        try:
            before = await store.create(ns + "before", b"1")
            await _until(lambda: len(events) == 1, 10, "first event")
            cluster.members[0].pause()  # the store talks to the first endpoint first
            t0 = time.monotonic()
            kv = await store.create(ns + "during", b"2")
            assert (await store.get(kv.key)) == kv
            assert time.monotonic() - t0 < 15
            await _until(lambda: len(events) == 2, 30, "event after the hang")
            assert [e.revision for e in events] == [before.mod_revision, kv.mod_revision]
        finally:
            cluster.members[0].resume()
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            await store.close()
