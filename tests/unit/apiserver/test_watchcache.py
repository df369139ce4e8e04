"""The watch cache: indexed fan-out (an event reaches only the watchers it concerns), one shared event per change,
history replay, and slow watchers closed."""

import asyncio

import pytest

from pykubeadm.apiserver.registry import STRATEGIES, RequestContext, Store
from pykubeadm.apiserver.registry.watchcache import WatchClosed
from pykubeadm.apiserver.selectors import FieldSelector, LabelSelector, parse_field_selector, parse_label_selector
from pykubeadm.storage.memory import MemoryStore

CTX = RequestContext()


def store_of(plural: str) -> tuple[Store, MemoryStore]:
    backend = MemoryStore()
    return Store(next(s for s in STRATEGIES if s.plural == plural), backend), backend


def fsel(st: Store, text: str) -> FieldSelector:
    return parse_field_selector(text, st.strategy.supports_field)


async def events_until(w, count: int, timeout: float = 5.0):
    """The next `count` events of watcher `w` (waits on the condition with a deadline)."""
    out = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(out) < count:
        out += w.drain()
        if len(out) < count:
            assert loop.time() < deadline, f"only {len(out)} of {count} events"
            await w.wait(deadline - loop.time())
    return out


async def settle(st: Store, backend: MemoryStore, body: dict | None = None) -> None:
    """Wait until the watch cache has dispatched everything the store holds (a marker watcher sees the last write)."""
    rev = await backend.current_revision()
    marker = await st.open_watch(None, rev + 1, LabelSelector(), FieldSelector())
    try:
        await st.create("default", {**(body or {}), "metadata": {"name": f"marker-{rev}"}}, CTX)
        await events_until(marker, 1)
    finally:
        marker.close()


async def test_event_for_node_reaches_only_that_nodes_watcher():
    st, backend = store_of("leases")
    start = await backend.current_revision() + 1
    watchers = {
        n: await st.open_watch("kube-node-lease", start, LabelSelector(), fsel(st, f"metadata.name={n}")) for n in "abc"
    }
    await st.create("kube-node-lease", {"metadata": {"name": "b"}, "spec": {"holderIdentity": "b"}}, CTX)
    (ev,) = await events_until(watchers["b"], 1)
    assert ev.type == "ADDED" and ev.object["metadata"]["name"] == "b"
    assert watchers["a"].drain() == [] and watchers["c"].drain() == []
    # Indexed: the cache offers the change to b's watcher alone, not to every watcher of the kind.
    cache = st._watch_cache
    assert cache._unindexed == set() and cache._index[("f", "metadata.name", "b")] == {watchers["b"]}
    for w in watchers.values():
        w.close()
    assert cache.watcher_count() == 0 and cache._fields == {}


async def test_pods_by_node_name_index_follows_binding():
    st, backend = store_of("pods")
    start = await backend.current_revision() + 1
    on_n1 = await st.open_watch(None, start, LabelSelector(), fsel(st, "spec.nodeName=n1"))
    on_n2 = await st.open_watch(None, start, LabelSelector(), fsel(st, "spec.nodeName=n2"))
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}], "nodeName": "n1"}}
    await st.create("default", pod, CTX)
    await st.update("default", "p", lambda old: {**old, "metadata": {**old["metadata"], "labels": {"a": "b"}}}, CTX)
    evs = await events_until(on_n1, 2)
    assert [e.type for e in evs] == ["ADDED", "MODIFIED"]
    await st.delete("default", "p", RequestContext(), {"gracePeriodSeconds": 0})
    assert [e.type for e in await events_until(on_n1, 1)] == ["DELETED"]
    await settle(st, backend, {"spec": {"containers": [{"name": "c", "image": "x"}]}})
    assert on_n2.drain() == []


async def test_label_selector_watcher_sees_objects_enter_and_leave():
    st, backend = store_of("configmaps")
    start = await backend.current_revision() + 1
    w = await st.open_watch(None, start, parse_label_selector("app=web"), FieldSelector())
    other = await st.open_watch(None, start, parse_label_selector("app=db"), FieldSelector())
    assert st._watch_cache._index.keys() >= {("l", "app", "web"), ("l", "app", "db")}
    await st.create("ns1", {"metadata": {"name": "x", "labels": {"app": "web"}}}, CTX)
    await st.create("ns1", {"metadata": {"name": "y"}}, CTX)
    await st.update("ns1", "x", lambda old: {**old, "metadata": {**old["metadata"], "labels": {"app": "api"}}}, CTX)
    evs = await events_until(w, 2)
    assert [(e.type, e.object["metadata"]["name"]) for e in evs] == [("ADDED", "x"), ("DELETED", "x")]
    await settle(st, backend)
    assert w.drain() == [] and other.drain() == []


async def test_namespace_watchers_and_shared_events():
    st, backend = store_of("configmaps")
    start = await backend.current_revision() + 1
    ns1 = [await st.open_watch("ns1", start, LabelSelector(), FieldSelector()) for _ in range(3)]
    ns2 = await st.open_watch("ns2", start, LabelSelector(), FieldSelector())
    everything = await st.open_watch(None, start, LabelSelector(), FieldSelector())
    await st.create("ns1", {"metadata": {"name": "a"}}, CTX)
    got = [(await events_until(w, 1))[0] for w in ns1]
    # One WatchEvent (and so one encoding) shared by every watcher it reaches.
    assert got[0] is got[1] is got[2] and got[0].encoded == {}
    assert (await events_until(everything, 1))[0] is got[0]
    await settle(st, backend)
    assert ns2.drain() == []


async def test_slow_watcher_is_closed_and_others_continue():
    st, backend = store_of("configmaps")
    start = await backend.current_revision() + 1
    slow = await st._watch_cache.watch("ns", start, LabelSelector(), FieldSelector(), buffer=3)
    fast = await st.open_watch("ns", start, LabelSelector(), FieldSelector())
    for i in range(5):
        await st.create("ns", {"metadata": {"name": f"o{i}"}}, CTX)
    assert len(await events_until(fast, 5)) == 5
    assert slow.closed
    with pytest.raises(WatchClosed):
        slow.drain()
    assert slow not in set(st._watch_cache._all_watchers())


async def test_watch_from_recent_revision_replays_history_and_old_one_reads_storage():
    st, _backend = store_of("configmaps")
    first = await st.create("ns", {"metadata": {"name": "a"}}, CTX)
    w0 = await st.open_watch("ns", int(first["metadata"]["resourceVersion"]) + 1, LabelSelector(), FieldSelector())
    second = await st.create("ns", {"metadata": {"name": "b"}}, CTX)
    await events_until(w0, 1)
    # From the cache's history: the change at second's revision is replayed.
    w1 = await st.open_watch("ns", int(second["metadata"]["resourceVersion"]), LabelSelector(), FieldSelector())
    assert [e.object["metadata"]["name"] for e in await events_until(w1, 1)] == ["b"]
    # Older than the cache's history: a storage watch of its own still delivers the change at that revision.
    w2 = await st.open_watch("ns", int(first["metadata"]["resourceVersion"]), LabelSelector(), FieldSelector())
    assert [e.object["metadata"]["name"] for e in await events_until(w2, 2)] == ["a", "b"]
    for w in (w0, w1, w2):
        w.close()


async def test_iterator_consumers_get_private_copies():
    st, backend = store_of("configmaps")
    start = await backend.current_revision() + 1
    w = await st.open_watch("ns", start, LabelSelector(), FieldSelector())
    got = []

    async def consume():
        async for ev in st.watch("ns", start, LabelSelector(), FieldSelector()):
            ev.object["metadata"]["name"] = "changed"
            got.append(ev)
            return

    task = asyncio.create_task(consume())
    await st.create("ns", {"metadata": {"name": "a"}}, CTX)
    await asyncio.wait_for(task, 5)
    assert got and (await events_until(w, 1))[0].object["metadata"]["name"] == "a"
