"""SQLite engine specifics: periodic compaction, slow watchers, watchers seeing another store's writes (the
multi-process case), group commit of concurrent writers, the on-disk kine layout."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from pykubeadm.storage import sqlite as sqlite_engine
from pykubeadm.storage.interface import CompactedError, ConflictError
from pykubeadm.storage.sqlite import SqliteStore

pytestmark = pytest.mark.timeout(30)


async def test_kine_layout_on_disk(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "state.db")
    try:
        kv = await store.create("/registry/minions/n1", b'{"kind":"Node"}')
        kv = await store.update(kv.key, b"v2", kv.mod_revision)
        await store.delete(kv.key, kv.mod_revision)
    finally:
        await store.close()
    conn = sqlite3.connect(tmp_path / "state.db")
    rows = conn.execute(
        "SELECT id, name, created, deleted, create_revision, prev_revision, value, old_value FROM kine ORDER BY id"
    ).fetchall()
    assert rows == [
        (2, "/registry/minions/n1", 1, 0, 2, 0, b'{"kind":"Node"}', None),
        (3, "/registry/minions/n1", 0, 0, 2, 2, b"v2", b'{"kind":"Node"}'),
        (4, "/registry/minions/n1", 0, 1, 2, 3, b"v2", b"v2"),
    ]
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    indexes = {r[1] for r in conn.execute("PRAGMA index_list(kine)")}
    assert "kine_name_prev_revision_uindex" in indexes
    conn.close()


async def test_periodic_compaction(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "state.db", compact_interval=0.1, compact_min_retain=5)
    try:
        kv = await store.create("/registry/a/k", b"0")
        first = kv.mod_revision
        for i in range(30):
            kv = await store.update(kv.key, str(i).encode(), kv.mod_revision)
        for _ in range(100):  # the compaction loop runs every 0.1 s
            try:
                await store.list("/registry/", revision=first)
            except CompactedError as err:
                if err.compacted == kv.mod_revision - 5:  # (an earlier round may have run during the updates)
                    break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("periodic compaction did not run")
        assert (await store.get(kv.key)) == kv
    finally:
        await store.close()
    conn = sqlite3.connect(tmp_path / "state.db")
    assert conn.execute("SELECT COUNT(*) FROM kine").fetchone()[0] <= 6
    conn.close()


async def test_slow_watcher_replays_from_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_engine, "_WATCH_QUEUE_MAX", 5)
    store = await SqliteStore.open(tmp_path / "state.db")
    try:
        start = await store.current_revision() + 1
        it = store.watch("/registry/", start)
        got = []
        first = asyncio.ensure_future(anext(it))
        kv = await store.create("/registry/x/k", b"0")
        got.append(await first)
        for i in range(50):  # the consumer reads nothing meanwhile: its queue overflows
            kv = await store.update(kv.key, str(i).encode(), kv.mod_revision)
        await store._caught_up(kv.mod_revision)  # the tail task has fanned out all 50: the queue overflowed
        assert all(w.resync for w in store._watchers)  # overflowed: it will replay from the log
        while len(got) < 51:
            got.append(await asyncio.wait_for(anext(it), 5))
        await it.aclose()
        assert [e.revision for e in got] == list(range(start, start + 51))
    finally:
        await store.close()


async def test_watch_sees_writes_of_another_store_on_the_same_file(tmp_path: Path) -> None:
    reader = await SqliteStore.open(tmp_path / "state.db", poll_interval=0.05)
    writer = await SqliteStore.open(tmp_path / "state.db")
    try:
        it = reader.watch("/registry/", 0)
        nxt = asyncio.ensure_future(anext(it))
        await asyncio.sleep(0.1)
        kv = await writer.create("/registry/y/k", b"from elsewhere")
        ev = await asyncio.wait_for(nxt, 5)
        assert ev.type == "ADDED" and ev.kv == kv
        with pytest.raises(ConflictError):  # the second writer's CAS is checked against the file, not memory
            await reader.update(kv.key, b"stale", kv.mod_revision - 1)
        await it.aclose()
    finally:
        await writer.close()
        await reader.close()


async def test_concurrent_writers_share_commits(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "state.db")
    batches: list[int] = []
    real = store._log.write_batch

    def spy(conn, ops):  # type: ignore[no-untyped-def]
        batches.append(len(ops))
        return real(conn, ops)

    store._log.write_batch = spy  # type: ignore[method-assign]
    try:
        kvs = await asyncio.gather(*(store.create(f"/registry/z/{i}", b"x") for i in range(64)))
        assert sorted(kv.mod_revision for kv in kvs) == list(range(2, 66))
        assert len(batches) < 64  # group commit: fewer transactions (fsyncs) than writes
    finally:
        await store.close()


async def test_new_database_is_owner_only(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "state.db")
    try:
        await store.create("/registry/secrets/ns/s", b"secret")
    finally:
        await store.close()
    assert (tmp_path / "state.db").stat().st_mode & 0o777 == 0o600


async def test_watch_order_with_two_writers_on_one_file(tmp_path: Path) -> None:
    """Our own commit right after another process's: the watcher still gets both, in revision order."""
    mine = await SqliteStore.open(tmp_path / "state.db", poll_interval=30)  # no polling: only our commits wake it
    other = await SqliteStore.open(tmp_path / "state.db")
    try:
        it = mine.watch("/registry/", 2)
        first = asyncio.ensure_future(anext(it))
        await asyncio.sleep(0.1)  # the watcher is live (replay done) before the writes
        theirs = await other.create("/registry/o/a", b"theirs")
        ours = await mine.create("/registry/o/b", b"ours")
        got = [await asyncio.wait_for(first, 5), await asyncio.wait_for(anext(it), 5)]
        assert [e.kv for e in got] == [theirs, ours]
        await it.aclose()
    finally:
        await other.close()
        await mine.close()
