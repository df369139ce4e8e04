"""The lease endpoint reconciler: `default/kubernetes` Endpoints and EndpointSlice list every live apiserver, a crashed
one drops out when its lease expires, a stopped one at once. Two apiservers share one SQLite store; the lease TTL and
renew interval are shortened through PYKUBEADM_ENDPOINT_RECONCILER_TTL / _INTERVAL."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import Endpoints
from lightkube.resources.discovery_v1 import EndpointSlice

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration


def wait_until(predicate, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


@pytest.fixture()
def two_apiservers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ApiServer, ApiServer]]:
    monkeypatch.setenv("PYKUBEADM_ENDPOINT_RECONCILER_TTL", "3")
    monkeypatch.setenv("PYKUBEADM_ENDPOINT_RECONCILER_INTERVAL", "0.5")
    first = ApiServer(tmp_path / "a", host="127.0.0.1")
    # same secure port on another loopback address, as control-plane nodes have
    second = ApiServer(tmp_path / "b", host="127.0.0.2", port=first.port, storage=first.storage_url)
    try:
        first.start()
        second.start()
        yield first, second
    finally:
        second.stop()
        first.stop()


def endpoint_ips(client: Client) -> list[str]:
    ep = client.get(Endpoints, "kubernetes", namespace="default")
    return sorted(a.ip for s in ep.subsets or [] for a in s.addresses or [])


def slice_ips(client: Client) -> list[str]:
    es = client.get(EndpointSlice, "kubernetes", namespace="default")
    return sorted(a for e in es.endpoints or [] for a in e.addresses)


def test_kubernetes_endpoints_follow_the_live_apiservers(
    two_apiservers: tuple[ApiServer, ApiServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = two_apiservers
    client = sync_client(first.kubeconfig())
    both = ["127.0.0.1", "127.0.0.2"]
    wait_until(lambda: endpoint_ips(client) == both and slice_ips(client) == both, 20, "both apiservers listed")
    ep = client.get(Endpoints, "kubernetes", namespace="default")
    (subset,) = ep.subsets
    assert [(p.name, p.port, p.protocol) for p in subset.ports] == [("https", first.port, "TCP")]
    assert ep.metadata.labels["endpointslice.kubernetes.io/skip-mirror"] == "true"
    es = client.get(EndpointSlice, "kubernetes", namespace="default")
    assert es.metadata.labels == {"kubernetes.io/service-name": "kubernetes"}
    assert es.addressType == "IPv4"
    assert [(p.name, p.port) for p in es.ports] == [("https", first.port)]
    assert all(e.conditions.ready for e in es.endpoints)

    # a crashed apiserver (no chance to remove its lease) drops out once the lease expires
    assert second.proc is not None
    second.proc.kill()
    second.proc.wait()
    second.proc = None
    killed = time.monotonic()
    wait_until(lambda: endpoint_ips(client) == ["127.0.0.1"], 20, "the killed apiserver removed")
    assert time.monotonic() - killed >= 2  # not before its lease expired (3 s TTL, last renewed ≤ 0.5 s before)
    wait_until(lambda: slice_ips(client) == ["127.0.0.1"], 10, "the EndpointSlice follows")

    # it comes back with a long lease, then stops gracefully: it removes its lease itself, long before expiry
    monkeypatch.setenv("PYKUBEADM_ENDPOINT_RECONCILER_TTL", "120")
    second.start()
    wait_until(lambda: endpoint_ips(client) == both, 20, "the restarted apiserver listed")
    second.stop()
    wait_until(lambda: endpoint_ips(client) == ["127.0.0.1"], 30, "the stopped apiserver removed")
