"""The leader-election state machine with a fake clock and an in-memory lock shared by several candidates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pykubeadm.util.leaderelection import FakeLock, LeaderElectionRecord, LeaderElector


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def wall(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=self.t)

    async def sleep(self, seconds: float) -> None:
        self.t += seconds


def elector(store: dict, identity: str, clock: Clock) -> LeaderElector:
    return LeaderElector(FakeLock(store, identity), clock=clock, wallclock=clock.wall, sleep=clock.sleep)


async def test_first_candidate_creates_the_lease_second_waits() -> None:
    store: dict = {}
    clock = Clock()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    assert await a.try_acquire_or_renew()
    assert a.is_leader()
    record: LeaderElectionRecord = store["lock"][1]
    assert record.holder_identity == "a" and record.lease_duration_seconds == 15 and record.lease_transitions == 0
    assert not await b.try_acquire_or_renew()
    assert not b.is_leader()


async def test_renewal_keeps_acquire_time_and_blocks_others() -> None:
    store: dict = {}
    clock = Clock()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    await a.try_acquire_or_renew()
    acquired = store["lock"][1].acquire_time
    for _ in range(20):  # 40 s of renewals every 2 s
        clock.t += 2
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
    assert store["lock"][1].acquire_time == acquired
    assert store["lock"][1].renew_time == clock.wall()


async def test_takeover_only_after_lease_duration_of_local_observation() -> None:
    store: dict = {}
    clock = Clock()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()  # b observes the record now
    clock.t += 14.9
    assert not await b.try_acquire_or_renew()
    clock.t += 0.2
    assert await b.try_acquire_or_renew()
    rec = store["lock"][1]
    assert rec.holder_identity == "b" and rec.lease_transitions == 1
    # the old leader's fast path fails (conflict) and the slow path sees b's fresh record
    assert not await a.try_acquire_or_renew()
    assert not a.is_leader()


async def test_observation_is_by_local_clock_not_renew_time() -> None:
    store: dict = {}
    clock = Clock()
    # a record whose renewTime is ancient but which b has never seen before counts as fresh
    store["lock"] = (
        1,
        LeaderElectionRecord("a", 15, datetime(2000, 1, 1, tzinfo=UTC), datetime(2000, 1, 1, tzinfo=UTC), 3),
    )
    b = elector(store, "b", clock)
    assert not await b.try_acquire_or_renew()
    clock.t += 16
    assert await b.try_acquire_or_renew()
    assert store["lock"][1].lease_transitions == 4


async def test_released_lease_duration_one_second() -> None:
    store: dict = {}
    clock = Clock()
    store["lock"] = (1, LeaderElectionRecord("a", 1, None, None, 0))
    b = elector(store, "b", clock)
    assert not await b.try_acquire_or_renew()
    clock.t += 1.1
    assert await b.try_acquire_or_renew()


async def test_renew_gives_up_after_renew_deadline() -> None:
    store: dict = {}
    clock = Clock()
    a = elector(store, "a", clock)
    await a.acquire()
    a.lock.fail = True  # type: ignore[attr-defined]
    start = clock.t
    await a.renew()
    assert 10 <= clock.t - start <= 14


async def test_run_stops_leading_when_lease_lost() -> None:
    store: dict = {}
    clock = Clock()
    a = elector(store, "a", clock)
    led = []

    async def lead() -> None:
        led.append(True)
        a.lock.fail = True  # type: ignore[attr-defined]
        import asyncio

        await asyncio.Event().wait()

    await a.run(lead)
    assert led == [True]


def test_timings_are_validated() -> None:
    with pytest.raises(ValueError):
        LeaderElector(FakeLock({}, "a"), lease_duration=10, renew_deadline=10, retry_period=2)
    with pytest.raises(ValueError):
        LeaderElector(FakeLock({}, "a"), lease_duration=15, renew_deadline=2, retry_period=2)
