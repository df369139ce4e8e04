"""The in-memory storage engine (the fake of storage.interface.Store) follows the same contract as the real ones."""

import asyncio

import pytest

from pykubeadm.storage.interface import CompactedError, ConflictError, KeyExistsError, KeyNotFoundError, Store
from pykubeadm.storage.memory import MemoryStore


async def test_crud_revisions_and_guards():
    s = MemoryStore()
    assert isinstance(s, Store)
    a = await s.create("/r/a", b"1")
    with pytest.raises(KeyExistsError):
        await s.create("/r/a", b"x")
    b = await s.update("/r/a", b"2", a.mod_revision)
    assert (b.create_revision, b.mod_revision) == (1, 2)
    with pytest.raises(ConflictError):
        await s.update("/r/a", b"3", a.mod_revision)
    with pytest.raises(KeyNotFoundError):
        await s.delete("/r/zzz")
    await s.create("/r/b", b"b")
    page = await s.list("/r/", limit=1)
    assert [kv.key for kv in page.items] == ["/r/a"] and page.more and page.remaining == 1
    old = await s.list("/r/", revision=1)
    assert [(kv.key, kv.value) for kv in old.items] == [("/r/a", b"1")]
    assert (await s.delete("/r/a")).value == b"2"
    assert await s.get("/r/a") is None


async def test_watch_replays_then_follows_and_compaction_is_410():
    s = MemoryStore()
    await s.create("/r/a", b"1")
    await s.update("/r/a", b"2", 0)
    got = []

    async def watch():
        async for ev in s.watch("/r/", 1):
            got.append((ev.type, ev.revision))
            if len(got) == 3:
                return

    task = asyncio.create_task(watch())
    await asyncio.sleep(0.01)
    await s.delete("/r/a")
    await asyncio.wait_for(task, 1)
    assert got == [("ADDED", 1), ("MODIFIED", 2), ("DELETED", 3)]
    await s.compact(3)
    with pytest.raises(CompactedError):
        async for _ in s.watch("/r/", 2):
            pass
    with pytest.raises(CompactedError):
        await s.list("/r/", revision=1)
