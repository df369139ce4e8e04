"""kube-apiserver's lease endpoint reconciler (`--endpoint-reconciler-type=lease`, the default): the `kubernetes`
Service's endpoints are the apiservers that are alive.

Every apiserver keeps a lease record in storage under `/registry/masterleases/<advertise address>` (an Endpoints
object naming its address, like kube's; expiry is kept in the record since our engines have no key TTL), renewed every
10 s with a 15 s time to live. Each pass lists the unexpired leases and makes `default/kubernetes` Endpoints hold
exactly those addresses with port `https` (the secure port), label `endpointslice.kubernetes.io/skip-mirror: "true"`,
and the EndpointSlice `default/kubernetes` (label `kubernetes.io/service-name`) match them. On a graceful stop the
apiserver removes its own lease and reconciles, so it drops out at once; a crashed one drops out when its lease expires.
`none` turns the reconciler off. The interval and TTL, constants in kube, can be shortened for tests with the
environment variables PYKUBEADM_ENDPOINT_RECONCILER_INTERVAL / PYKUBEADM_ENDPOINT_RECONCILER_TTL (seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import ipaddress
import json
import logging
import os
import time
from typing import Any, Final

from pykubeadm import constants as c
from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.registry import RequestContext
from pykubeadm.apiserver.state import ApiState
from pykubeadm.storage import ConflictError, KeyExistsError, KeyNotFoundError, StoreError

__all__ = ["LeaseEndpointReconciler", "endpoint_slice_for", "endpoints_subsets"]

log = logging.getLogger("pykubeadm.apiserver.endpointreconciler")

Obj = dict[str, Any]

LEASE_PREFIX: Final = "/registry/masterleases/"
DEFAULT_INTERVAL: Final = 10.0
DEFAULT_TTL: Final = 15.0
SERVICE: Final = "kubernetes"
SKIP_MIRROR: Final = "endpointslice.kubernetes.io/skip-mirror"
EXPIRES: Final = "pykubeadm.io/lease-expires"
SLICES: Final = "endpointslices.discovery.k8s.io"

_CTX = RequestContext()


def _env_seconds(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, "") or default)
    except ValueError:
        return default


def _ip_key(ip: str) -> tuple[int, Any]:
    try:
        addr = ipaddress.ip_address(ip)
        return addr.version, addr
    except ValueError:
        return 9, ip


def endpoints_subsets(ips: list[str], port: int) -> list[Obj]:
    return [
        {
            "addresses": [{"ip": ip} for ip in sorted(ips, key=_ip_key)],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }
    ]


def endpoint_slice_for(endpoints: Obj) -> Obj:
    """kube's EndpointsAdapter.EnsureEndpointSliceFromEndpoints: the slice mirroring the `kubernetes` Endpoints."""
    subsets = endpoints.get("subsets") or []
    addresses = [a["ip"] for a in (subsets[0].get("addresses") or [])] if subsets else []
    v6 = bool(addresses) and all(_ip_key(ip)[0] == 6 for ip in addresses)
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": SERVICE,
            "namespace": c.NAMESPACE_DEFAULT,
            "labels": {"kubernetes.io/service-name": SERVICE},
        },
        "addressType": "IPv6" if v6 else "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True}} for ip in addresses],
        "ports": [
            {"name": p.get("name", ""), "port": p["port"], "protocol": p.get("protocol", "TCP")}
            for p in (subsets[0].get("ports") or [] if subsets else [])
        ],
    }


class LeaseEndpointReconciler:
    """One apiserver's share of keeping `default/kubernetes` endpoints equal to the live apiservers."""

    def __init__(
        self,
        state: ApiState,
        address: str,
        port: int,
        *,
        interval: float | None = None,
        ttl: float | None = None,
    ) -> None:
        self.state = state
        self.address = address
        self.port = port
        self.interval = (
            interval
            if interval is not None
            else _env_seconds("PYKUBEADM_ENDPOINT_RECONCILER_INTERVAL", DEFAULT_INTERVAL)
        )
        self.ttl = ttl if ttl is not None else _env_seconds("PYKUBEADM_ENDPOINT_RECONCILER_TTL", DEFAULT_TTL)

    # --- leases ---------------------------------------------------------------------------------------------------

    async def update_lease(self) -> None:
        key = LEASE_PREFIX + self.address
        record = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": self.address, "annotations": {EXPIRES: f"{time.time() + self.ttl:.3f}"}},
            "subsets": [{"addresses": [{"ip": self.address}]}],
        }
        value = json.dumps(record).encode()
        backend = self.state.backend
        for _ in range(5):
            current = await backend.get(key)
            try:
                if current is None:
                    await backend.create(key, value)
                else:
                    await backend.update(key, value, current.mod_revision)
                return
            except (KeyExistsError, ConflictError, KeyNotFoundError):
                continue

    async def remove_lease(self) -> None:
        with contextlib.suppress(KeyNotFoundError, ConflictError):
            await self.state.backend.delete(LEASE_PREFIX + self.address)

    async def live_addresses(self) -> list[str]:
        """The addresses of unexpired leases (expired ones are deleted on the way, as etcd's TTL would)."""
        now = time.time()
        live: list[str] = []
        page = await self.state.backend.list(LEASE_PREFIX)
        for kv in page.items:
            try:
                record = json.loads(kv.value)
                expires = float(record["metadata"]["annotations"][EXPIRES])
                ip = record["subsets"][0]["addresses"][0]["ip"]
            except (ValueError, KeyError, IndexError, TypeError):
                continue
            if expires > now:
                live.append(ip)
            else:
                with contextlib.suppress(KeyNotFoundError, ConflictError):
                    await self.state.backend.delete(kv.key, kv.mod_revision)
        return sorted(set(live), key=_ip_key)

    # --- endpoints --------------------------------------------------------------------------------------------------

    async def reconcile(self) -> None:
        """kube's doReconcile: Endpoints (and the EndpointSlice) of `kubernetes` list exactly the live apiservers."""
        ips = await self.live_addresses()
        if not ips:
            log.warning(
                "no API server IP addresses were listed in storage, refusing to erase all endpoints for the kubernetes Service"
            )
            return
        want_subsets = endpoints_subsets(ips, self.port)
        store = self.state.store("endpoints")
        current = await store.try_get(c.NAMESPACE_DEFAULT, SERVICE)
        if current is None:
            obj: Obj = {
                "metadata": {"name": SERVICE, "labels": {SKIP_MIRROR: "true"}},
                "subsets": want_subsets,
            }
            with contextlib.suppress(st.ApiError):
                current = await store.create(c.NAMESPACE_DEFAULT, obj, _CTX)
        elif (
            current.get("subsets") != want_subsets
            or (current["metadata"].get("labels") or {}).get(SKIP_MIRROR) != "true"
        ):
            log.info("Resetting endpoints for master service %q to %s", SERVICE, ips)

            def transform(old: Obj | None) -> Obj:
                new = copy.deepcopy(old or {})
                new.setdefault("metadata", {}).pop("resourceVersion", None)
                new["metadata"].setdefault("labels", {})[SKIP_MIRROR] = "true"
                new["subsets"] = want_subsets
                return new

            current, _ = await store.update(c.NAMESPACE_DEFAULT, SERVICE, transform, _CTX)
        if current is not None:
            await self._ensure_slice(current)

    async def _ensure_slice(self, endpoints: Obj) -> None:
        store = self.state.by_resource.get(SLICES)
        if store is None:
            return  # the EndpointSlice kind is not served
        want = endpoint_slice_for(endpoints)
        current = await store.try_get(c.NAMESPACE_DEFAULT, SERVICE)
        if current is None:
            with contextlib.suppress(st.ApiError):
                await store.create(c.NAMESPACE_DEFAULT, want, _CTX)
            return
        fields = ("addressType", "endpoints", "ports")
        if (
            all(current.get(f) == want.get(f) for f in fields)
            and (current["metadata"].get("labels") or {}) == want["metadata"]["labels"]
        ):
            return

        def transform(old: Obj | None) -> Obj:
            new = copy.deepcopy(old or {})
            new.setdefault("metadata", {}).pop("resourceVersion", None)
            new["metadata"]["labels"] = dict(want["metadata"]["labels"])
            for f in fields:
                new[f] = copy.deepcopy(want[f])
            return new

        await store.update(c.NAMESPACE_DEFAULT, SERVICE, transform, _CTX)

    # --- loop -----------------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Renew the lease and reconcile every interval until cancelled; then remove the lease (graceful stop)."""
        try:
            while True:
                try:
                    await self.update_lease()
                    await self.reconcile()
                except asyncio.CancelledError:
                    raise
                except (StoreError, st.ApiError, OSError) as err:
                    log.warning("endpoint reconciler: %s", err)
                await asyncio.sleep(self.interval)
        finally:
            await self.stop()

    async def stop(self) -> None:
        """RemoveEndpoints: drop our lease and reconcile without us."""
        try:
            await asyncio.wait_for(self._remove_and_reconcile(), timeout=5)
        except Exception as err:  # shutting down: best effort
            log.info("endpoint reconciler: removing our lease: %s", err)

    async def _remove_and_reconcile(self) -> None:
        await self.remove_lease()
        await self.reconcile()
