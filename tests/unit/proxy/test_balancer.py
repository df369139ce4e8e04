"""Endpoint choice of the userspace proxier: round robin, ClientIP affinity with its timeout."""

from __future__ import annotations

from pykubeadm.proxy.balancer import Balancer
from pykubeadm.proxy.servicemap import Endpoint, ServicePort, ServicePortName

NAME = ServicePortName("ns", "web", "http", "TCP")
EPS = [Endpoint("10.0.0.1", 80), Endpoint("10.0.0.2", 80), Endpoint("10.0.0.3", 80)]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_round_robin_visits_every_endpoint() -> None:
    b = Balancer()
    sp = ServicePort(NAME, ("127.96.0.1",), 80, "TCP")
    picks = [b.pick(sp, EPS, "127.0.0.1") for _ in range(6)]
    assert picks == EPS + EPS


def test_no_endpoints_gives_none_and_skip_is_honoured() -> None:
    b = Balancer()
    sp = ServicePort(NAME, ("127.96.0.1",), 80, "TCP")
    assert b.pick(sp, [], "127.0.0.1") is None
    assert b.pick(sp, EPS[:1], "127.0.0.1", skip=frozenset(EPS[:1])) is None


def test_affinity_sticks_until_timeout() -> None:
    clock = Clock()
    b = Balancer(clock)
    sp = ServicePort(NAME, ("127.96.0.1",), 80, "TCP", session_affinity=True, affinity_timeout=60)
    first = b.pick(sp, EPS, "127.0.0.5")
    assert all(b.pick(sp, EPS, "127.0.0.5") == first for _ in range(10))
    clock.now += 59
    assert b.pick(sp, EPS, "127.0.0.5") == first  # each use refreshes the timer


def test_affinity_first_choice_is_the_same_in_every_proxier() -> None:
    sp = ServicePort(NAME, ("127.96.0.1",), 80, "TCP", session_affinity=True)
    choices = {Balancer().pick(sp, list(reversed(EPS)) if i % 2 else EPS, "127.0.0.7") for i in range(6)}
    assert len(choices) == 1


def test_affinity_moves_when_its_endpoint_goes_away() -> None:
    b = Balancer()
    sp = ServicePort(NAME, ("127.96.0.1",), 80, "TCP", session_affinity=True)
    first = b.pick(sp, EPS, "127.0.0.5")
    rest = [e for e in EPS if e != first]
    assert b.pick(sp, rest, "127.0.0.5") in rest
