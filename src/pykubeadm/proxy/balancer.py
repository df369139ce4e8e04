"""Endpoint choice of the userspace proxier: round robin per service port, ClientIP session affinity with a timeout.

Used by `userspace.UserspaceProxier` for every accepted connection (or new UDP client), like kube-proxy's old
userspace LoadBalancerRR. A client with affinity keeps its endpoint until `timeoutSeconds` pass without a connection
or the endpoint goes away. Its first endpoint is not the next in the round robin but a stable hash of the client IP
over the sorted endpoints, so the proxiers of several nodes sharing one ClusterIP listener (the lab) pick the same one
without sharing state; the affinity table itself is per proxier (it only remembers, and ages out, those choices).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence

from pykubeadm.proxy.servicemap import Endpoint, ServicePort, ServicePortName

__all__ = ["Balancer"]


class Balancer:
    """Round robin and affinity state of one proxier. `clock` is monotonic seconds (injectable for tests)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._next: dict[ServicePortName, int] = {}
        self._affinity: dict[tuple[ServicePortName, str], tuple[Endpoint, float]] = {}

    def pick(
        self, sp: ServicePort, endpoints: Sequence[Endpoint], client_ip: str, *, skip: frozenset[Endpoint] = frozenset()
    ) -> Endpoint | None:
        """The endpoint for a new connection from `client_ip`, or None when there is none (left out: `skip`)."""
        candidates = [e for e in endpoints if e not in skip]
        if not candidates:
            return None
        now = self.clock()
        if sp.session_affinity:
            key = (sp.name, client_ip)
            held = self._affinity.get(key)
            if held is not None and now - held[1] <= sp.affinity_timeout and held[0] in candidates:
                self._affinity[key] = (held[0], now)
                return held[0]
            ordered = sorted(candidates, key=lambda e: (e.ip, e.port))
            digest = hashlib.blake2b(f"{sp.name}|{client_ip}".encode(), digest_size=8).digest()
            chosen = ordered[int.from_bytes(digest, "big") % len(ordered)]
            self._affinity[key] = (chosen, now)
            return chosen
        index = self._next.get(sp.name, 0) % len(candidates)
        self._next[sp.name] = index + 1
        return candidates[index]

    def forget(self, sp: ServicePort, client_ip: str) -> None:
        """Drop a client's affinity (its endpoint refused the connection)."""
        self._affinity.pop((sp.name, client_ip), None)

    def prune(self, live: set[ServicePortName]) -> None:
        """Forget services that are gone and affinities that have expired."""
        now = self.clock()
        for name in [n for n in self._next if n not in live]:
            del self._next[name]
        for key, (_, last) in list(self._affinity.items()):
            if key[0] not in live or now - last > 86400:
                del self._affinity[key]

    def affinity_size(self) -> int:
        return len(self._affinity)
