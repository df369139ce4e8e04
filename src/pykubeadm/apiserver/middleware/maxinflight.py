"""Request limits (kube-apiserver's WithMaxInFlightLimit): at most `--max-requests-inflight` (400) read and
`--max-mutating-requests-inflight` (200) write requests at once; beyond that 429 `Too many requests, please try again
later.` with `Retry-After: 1`, as kube writes it (plain text, not a Status). Long-running requests (watch, proxy, and
the attach/exec/log/portforward/proxy subresources) are not counted; system:masters is never refused. A limit of 0
means no limit. Runs right after authentication (it needs the user).

Our addition, standing in for the per-user fairness of API Priority and Fairness: anonymous requests are also limited
per client address, to ANONYMOUS_PER_CLIENT at once and ANONYMOUS_QPS_PER_CLIENT per second (a token bucket with
twice that burst), and together to a quarter of the read limit, so a flood of anonymous cluster-info reads is answered
429 cheaply instead of taking the slots and the CPU that joining nodes and controllers need. A join reads cluster-info
anonymously twice.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Middleware

from pykubeadm import constants
from pykubeadm.apiserver.handlers.context import INFO_KEY, USER_KEY
from pykubeadm.apiserver.requestinfo import RequestInfo

__all__ = [
    "ANONYMOUS_PER_CLIENT",
    "ANONYMOUS_QPS_PER_CLIENT",
    "InflightLimits",
    "is_long_running",
    "max_in_flight_middleware",
    "too_many_requests",
]

#: Anonymous requests one client address may have in flight at once.
ANONYMOUS_PER_CLIENT = 8
#: Anonymous requests one client address may start per second (sustained; bursts up to twice as many).
ANONYMOUS_QPS_PER_CLIENT = 100.0
_BUCKETS_MAX = 4096
_NON_MUTATING_VERBS = frozenset({"get", "list", "watch"})
_LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})
_LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})
_MASTERS = "system:masters"


@dataclass(frozen=True)
class InflightLimits:
    non_mutating: int = 400
    mutating: int = 200
    anonymous_per_client: int = ANONYMOUS_PER_CLIENT
    anonymous_qps_per_client: float = ANONYMOUS_QPS_PER_CLIENT

    @property
    def anonymous_total(self) -> int:
        return max(self.anonymous_per_client, self.non_mutating // 4) if self.non_mutating else 0


def is_long_running(info: RequestInfo) -> bool:
    """kube-apiserver's BasicLongRunningRequestCheck(watch, proxy; attach, exec, proxy, log, portforward)."""
    if info.verb in _LONG_RUNNING_VERBS:
        return True
    return info.is_resource and info.subresource in _LONG_RUNNING_SUBRESOURCES


def too_many_requests(retry_after: str = "1") -> web.Response:
    """kube's tooManyRequests: Go's http.Error with 429, so plain text and nosniff."""
    return web.Response(
        status=429,
        text="Too many requests, please try again later.\n",
        content_type="text/plain",
        charset="utf-8",
        headers={"Retry-After": retry_after, "X-Content-Type-Options": "nosniff"},
    )


class _Counters:
    def __init__(self) -> None:
        self.reads = 0
        self.writes = 0
        self.anonymous = 0
        self.anonymous_by_client: dict[str, int] = {}
        #: client → (tokens, last refill time) of its anonymous token bucket.
        self.buckets: dict[str, tuple[float, float]] = {}

    def take_token(self, client: str, qps: float) -> bool:
        now = time.monotonic()
        burst = 2 * qps
        tokens, last = self.buckets.get(client, (burst, now))
        tokens = min(burst, tokens + (now - last) * qps)
        if tokens < 1:
            self.buckets[client] = (tokens, now)
            return False
        if client not in self.buckets and len(self.buckets) >= _BUCKETS_MAX:
            self.buckets = {k: v for k, v in self.buckets.items() if v[0] + (now - v[1]) * qps < burst}
        self.buckets[client] = (tokens - 1, now)
        return True


def max_in_flight_middleware(limits: InflightLimits | None = None) -> Middleware:
    limits = limits or InflightLimits()
    n = _Counters()

    @web.middleware
    async def max_in_flight(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        info = request.get(INFO_KEY)
        user = request.get(USER_KEY)
        if info is None or user is None or is_long_running(info):
            return await handler(request)
        privileged = _MASTERS in user.groups
        mutating = info.verb not in _NON_MUTATING_VERBS
        anonymous = user.name == constants.ANONYMOUS_USER
        client = request.remote or ""
        if not privileged:
            if mutating:
                if limits.mutating and n.writes >= limits.mutating:
                    return too_many_requests()
            elif limits.non_mutating and n.reads >= limits.non_mutating:
                return too_many_requests()
            if (
                anonymous
                and limits.anonymous_per_client
                and (
                    n.anonymous >= limits.anonymous_total
                    or n.anonymous_by_client.get(client, 0) >= limits.anonymous_per_client
                    or (limits.anonymous_qps_per_client and not n.take_token(client, limits.anonymous_qps_per_client))
                )
            ):
                return too_many_requests()
        if mutating:
            n.writes += 1
        else:
            n.reads += 1
        if anonymous:
            n.anonymous += 1
            n.anonymous_by_client[client] = n.anonymous_by_client.get(client, 0) + 1
        try:
            return await handler(request)
        finally:
            if mutating:
                n.writes -= 1
            else:
                n.reads -= 1
            if anonymous:
                n.anonymous -= 1
                left = n.anonymous_by_client[client] - 1
                if left:
                    n.anonymous_by_client[client] = left
                else:
                    del n.anonymous_by_client[client]

    return max_in_flight
