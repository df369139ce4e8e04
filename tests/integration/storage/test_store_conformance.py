"""The Store contract, run against every engine (SQLite file, real etcd): CRUD, optimistic concurrency, list at a
revision with pagination, ordered watches, resume without loss or duplicates, compaction, restart."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from pykubeadm.storage.interface import (
    CompactedError,
    ConflictError,
    Event,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    Store,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def collect(store: Store, prefix: str, start: int, n: int, timeout: float = 10.0) -> list[Event]:
    out: list[Event] = []
    it = store.watch(prefix, start)

    async def run() -> None:
        async for ev in it:
            out.append(ev)
            if len(out) == n:
                return

    try:
        await asyncio.wait_for(run(), timeout)
    finally:
        await it.aclose()  # type: ignore[attr-defined]
    return out


async def test_create_get_update_delete(store: Store, ns: str) -> None:
    key = ns + "default/cm1"
    assert await store.get(key) is None
    first = await store.current_revision()
    assert first >= 1
    created = await store.create(key, b'{"v":1}')
    assert created.mod_revision == created.create_revision > first
    assert await store.get(key) == created
    with pytest.raises(KeyExistsError):
        await store.create(key, b"again")

    updated = await store.update(key, b'{"v":2}', created.mod_revision)
    assert updated.mod_revision > created.mod_revision
    assert updated.create_revision == created.create_revision
    assert (await store.get(key)).value == b'{"v":2}'
    assert await store.current_revision() == updated.mod_revision

    unconditional = await store.update(key, b'{"v":3}', 0)
    assert unconditional.mod_revision > updated.mod_revision

    with pytest.raises(ConflictError) as conflict:
        await store.delete(key, updated.mod_revision)
    assert conflict.value.current is not None and conflict.value.current.value == b'{"v":3}'

    deleted = await store.delete(key, unconditional.mod_revision)
    assert deleted.value == b'{"v":3}' and deleted.mod_revision > unconditional.mod_revision
    assert await store.get(key) is None
    with pytest.raises(KeyNotFoundError):
        await store.update(key, b"x", deleted.mod_revision)
    with pytest.raises(KeyNotFoundError):
        await store.delete(key)

    again = await store.create(key, b"reborn")  # re-create after delete starts a new life
    assert again.create_revision == again.mod_revision > deleted.mod_revision


async def test_conflicting_updates_exactly_one_wins(store: Store, ns: str) -> None:
    key = ns + "default/contended"
    kv = await store.create(key, b"0")
    results = await asyncio.gather(
        *(store.update(key, str(i).encode(), kv.mod_revision) for i in range(12)), return_exceptions=True
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    losers = [r for r in results if isinstance(r, BaseException)]
    assert len(winners) == 1
    assert all(isinstance(e, ConflictError) for e in losers)
    assert all(e.current == winners[0] for e in losers)  # type: ignore[union-attr]
    assert await store.get(key) == winners[0]

    creates = await asyncio.gather(*(store.create(ns + "default/once", b"x") for _ in range(8)), return_exceptions=True)
    assert sum(not isinstance(r, BaseException) for r in creates) == 1
    assert all(isinstance(r, KeyExistsError) for r in creates if isinstance(r, BaseException))


async def test_list_at_revision_and_pagination(store: Store, ns: str) -> None:
    for i in range(7):
        await store.create(f"{ns}default/k{i}", json.dumps({"i": i}).encode())
    await store.create(ns.rstrip("/") + "x/outside", b"not under the prefix")
    snapshot = await store.list(ns)
    assert [kv.key for kv in snapshot.items] == [f"{ns}default/k{i}" for i in range(7)]
    at = snapshot.revision

    await store.update(f"{ns}default/k0", b"changed", snapshot.items[0].mod_revision)
    await store.delete(f"{ns}default/k1")
    await store.create(f"{ns}default/k9", b"new")

    now = await store.list(ns)
    assert now.revision > at
    assert [kv.key.rsplit("/", 1)[1] for kv in now.items] == ["k0", "k2", "k3", "k4", "k5", "k6", "k9"]
    old = await store.list(ns, revision=at)
    assert old.revision == at and old.items == snapshot.items

    # limit/continue at one revision: pages see the snapshot even while writes go on
    pages, start = [], None
    while True:
        page = await store.list(ns, revision=at, limit=3, start_key=start)
        pages.append(page)
        await store.create(f"{ns}default/k{len(pages)}x", b"during paging")
        if not page.more:
            break
        assert page.remaining == 7 - 3 * len(pages)
        start = page.items[-1].key + "\x00"
    assert [len(p.items) for p in pages] == [3, 3, 1]
    assert [kv for p in pages for kv in p.items] == snapshot.items

    with pytest.raises(FutureRevisionError):
        await store.list(ns, revision=await store.current_revision() + 1000)


async def test_watch_order_under_concurrent_writers(store: Store, ns: str) -> None:
    start = await store.current_revision() + 1
    writers, per = 8, 20
    watch = asyncio.ensure_future(collect(store, ns, start, writers * (per + 1), timeout=30))
    await asyncio.sleep(0.05)

    async def writer(w: int) -> None:
        kv = await store.create(f"{ns}default/w{w}", b"0")
        for i in range(per):
            kv = await store.update(kv.key, str(i + 1).encode(), kv.mod_revision)

    await asyncio.gather(*(writer(w) for w in range(writers)))
    events = await watch
    revs = [ev.revision for ev in events]
    assert revs == sorted(revs) and len(set(revs)) == len(revs)
    for w in range(writers):
        mine = [ev for ev in events if ev.kv.key == f"{ns}default/w{w}"]
        assert [ev.type for ev in mine] == ["ADDED"] + ["MODIFIED"] * per
        assert [ev.kv.value for ev in mine] == [str(i).encode() for i in range(per + 1)]
        for before, after in itertools.pairwise(mine):
            assert after.prev is not None and after.prev.mod_revision == before.revision
            assert after.prev.value == before.kv.value


async def test_watch_resume_without_loss_or_duplicates(store: Store, ns: str) -> None:
    start = await store.current_revision() + 1
    kv = await store.create(ns + "a/x", b"0")
    for i in range(1, 10):
        kv = await store.update(kv.key, str(i).encode(), kv.mod_revision)
    deleted = await store.delete(kv.key)
    await store.create(ns + "a/y", b"y")
    full = await collect(store, ns, start, 12)
    assert [e.type for e in full] == ["ADDED"] + ["MODIFIED"] * 9 + ["DELETED", "ADDED"]
    assert full[10].kv.mod_revision == deleted.mod_revision and full[10].kv.value == b"9"
    assert full[10].prev is not None and full[10].prev.value == b"9"

    # consume part, drop the watch, resume from the last seen revision + 1 while writes continue
    first = await collect(store, ns, start, 5)
    await store.create(ns + "a/z", b"z")
    rest = await collect(store, ns, first[-1].revision + 1, 8)
    got = [e.revision for e in first + rest]
    assert got == [e.revision for e in full] + [rest[-1].revision]
    assert len(set(got)) == len(got)

    # a watch "from now" sees only later changes
    later = asyncio.ensure_future(collect(store, ns, 0, 1))
    await asyncio.sleep(0.2)
    now = await store.create(ns + "a/now", b"1")
    [ev] = await later
    assert ev.revision == now.mod_revision


async def test_compaction_gives_compacted_error(store: Store, ns: str) -> None:
    kv = await store.create(ns + "c/k", b"0")
    old_rev = kv.mod_revision
    for i in range(5):
        kv = await store.update(kv.key, str(i).encode(), kv.mod_revision)
    mid = kv.mod_revision
    await store.create(ns + "c/other", b"o")
    await store.compact(mid)
    await store.compact(mid)  # idempotent

    with pytest.raises(CompactedError) as err:
        await store.list(ns, revision=old_rev)
    assert err.value.requested == old_rev
    with pytest.raises(CompactedError):
        await collect(store, ns, old_rev, 1)

    at_mid = await store.list(ns, revision=mid)  # the compacted revision itself still reads
    assert [(x.key, x.value) for x in at_mid.items] == [(kv.key, b"4")]
    events = await collect(store, ns, mid, 2)
    assert events[0].revision == mid
    assert (await store.list(ns)).items[0] == kv
    with pytest.raises(FutureRevisionError):
        await store.compact(await store.current_revision() + 100)


async def test_restart_keeps_every_acknowledged_write(backend, ns: str) -> None:  # type: ignore[no-untyped-def]
    store = await backend.open()
    acked = {}
    try:

        async def writer(w: int) -> None:
            for i in range(15):
                kv = await store.create(f"{ns}r/{w}-{i}", f"{w}-{i}".encode())
                acked[kv.key] = kv

        await asyncio.gather(*(writer(w) for w in range(4)))
        rev = await store.current_revision()
    finally:
        await store.close()
    backend.restart()
    store = await backend.open()
    try:
        listed = await store.list(ns)
        assert {kv.key: kv for kv in listed.items} == acked
        assert await store.current_revision() == rev
        more = await store.create(ns + "r/after", b"x")
        assert more.mod_revision == rev + 1
    finally:
        await store.close()


async def test_close_ends_open_watches(backend, ns: str) -> None:  # type: ignore[no-untyped-def]
    store = await backend.open()
    assert isinstance(store, Store)
    # from an explicit revision: with 0 ("after the current revision when iteration starts") a create racing the
    # lazy start of the watch could be missed
    it = store.watch(ns, await store.current_revision() + 1)
    first = asyncio.ensure_future(anext(it))
    kv = await store.create(ns + "w/k", b"1")
    assert (await asyncio.wait_for(first, 5)).kv == kv
    pending = asyncio.ensure_future(anext(it))
    await asyncio.sleep(0.1)
    await store.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(pending, 5)
