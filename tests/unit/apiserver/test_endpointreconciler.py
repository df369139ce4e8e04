"""The lease endpoint reconciler on the in-memory store: leases, expiry, and the `kubernetes` Endpoints/EndpointSlice."""

from __future__ import annotations

import asyncio
import json

from pykubeadm.apiserver.endpointreconciler import LEASE_PREFIX, LeaseEndpointReconciler, endpoint_slice_for
from pykubeadm.apiserver.registry import RequestContext
from pykubeadm.apiserver.state import ApiState
from pykubeadm.storage import open_store


async def _nobody(*_: object) -> None:
    return None


async def _state() -> ApiState:
    backend = await open_store("memory://")
    return ApiState(backend=backend, version_info={}, authenticator=_nobody, authorizer=_nobody)  # type: ignore[arg-type]


def test_live_apiservers_listed_and_expired_leases_dropped() -> None:
    async def scenario() -> None:
        state = await _state()
        await state.store("namespaces").create("", {"metadata": {"name": "default"}}, RequestContext())
        a = LeaseEndpointReconciler(state, "10.0.0.2", 6443, interval=1, ttl=60)
        b = LeaseEndpointReconciler(state, "10.0.0.10", 6443, interval=1, ttl=60)
        await a.update_lease()
        await b.update_lease()
        await a.reconcile()
        ep = await state.store("endpoints").get("default", "kubernetes")
        assert ep["subsets"] == [
            {
                "addresses": [{"ip": "10.0.0.2"}, {"ip": "10.0.0.10"}],
                "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}],
            }
        ]
        assert ep["metadata"]["labels"]["endpointslice.kubernetes.io/skip-mirror"] == "true"
        # b's lease expires: the next pass drops it (and deletes the record)
        kv = await state.backend.get(LEASE_PREFIX + "10.0.0.10")
        assert kv is not None
        record = json.loads(kv.value)
        record["metadata"]["annotations"]["pykubeadm.io/lease-expires"] = "1.0"
        await state.backend.update(kv.key, json.dumps(record).encode(), kv.mod_revision)
        await a.reconcile()
        ep = await state.store("endpoints").get("default", "kubernetes")
        assert ep["subsets"][0]["addresses"] == [{"ip": "10.0.0.2"}]
        assert await state.backend.get(LEASE_PREFIX + "10.0.0.10") is None
        # the last apiserver never erases itself
        await a.remove_lease()
        await a.reconcile()
        assert (await state.store("endpoints").get("default", "kubernetes"))["subsets"][0]["addresses"] == [
            {"ip": "10.0.0.2"}
        ]
        await state.backend.close()

    asyncio.run(scenario())


def test_endpoint_slice_mirrors_the_endpoints() -> None:
    endpoints = {
        "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]
    }
    es = endpoint_slice_for(endpoints)
    assert es["metadata"] == {
        "name": "kubernetes",
        "namespace": "default",
        "labels": {"kubernetes.io/service-name": "kubernetes"},
    }
    assert es["addressType"] == "IPv4"
    assert es["endpoints"] == [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}]
    assert es["ports"] == [{"name": "https", "port": 6443, "protocol": "TCP"}]
    assert endpoint_slice_for({"subsets": [{"addresses": [{"ip": "fd00::1"}]}]})["addressType"] == "IPv6"
