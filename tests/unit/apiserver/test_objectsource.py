"""StoreObjectSource: watch-fed caches for hot resources, live reads on a miss, and plain reads for the rest."""

import asyncio

from pykubeadm.apiserver.objects import ObjectSource
from pykubeadm.apiserver.objectsource import StoreObjectSource
from pykubeadm.apiserver.registry import RequestContext
from pykubeadm.apiserver.state import ApiState
from pykubeadm.storage.memory import MemoryStore


async def _nobody(req):
    return None


async def _deny(attrs):
    return None


async def _names(src, resource):
    return [o["metadata"]["name"] for o in await src.list(resource)]


async def _eventually(read, want, timeout=10.0):
    """`await read()` until it returns `want` or `timeout` passes; the last value read."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (got := await read()) != want and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    return got


async def test_cache_follows_the_store_and_misses_fall_back_to_live_reads():
    state = ApiState(backend=MemoryStore(), version_info={}, authenticator=_nobody, authorizer=_deny)
    ctx = RequestContext()
    crs = state.store("clusterroles.rbac.authorization.k8s.io")
    await crs.create("", {"metadata": {"name": "before"}, "rules": []}, ctx)
    source = StoreObjectSource(state.by_resource)
    src: ObjectSource = source
    await source.start()
    try:
        assert source.synced()
        assert (await src.get("clusterroles.rbac.authorization.k8s.io", "", "before"))["metadata"]["name"] == "before"
        await crs.create("", {"metadata": {"name": "after"}, "rules": []}, ctx)
        assert await src.get("clusterroles.rbac.authorization.k8s.io", "", "after") is not None  # live fallback
        names = await _eventually(
            lambda: _names(src, "clusterroles.rbac.authorization.k8s.io"), ["after", "before"]
        )  # the cache follows the store's watch
        assert names == ["after", "before"]
        await crs.delete("", "before", ctx)
        gone = await _eventually(lambda: src.get("clusterroles.rbac.authorization.k8s.io", "", "before"), None)
        assert gone is None
        await state.store("configmaps").create("ns", {"metadata": {"name": "c"}}, ctx)  # not cached: live reads
        assert [o["metadata"]["name"] for o in await src.list("configmaps", "ns")] == ["c"]
        assert await src.get("persistentvolumeclaims", "ns", "x") is None  # unknown resources are absent
    finally:
        await source.stop()
