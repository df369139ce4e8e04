"""Leader election on a coordination.k8s.io Lease, as client-go's leaderelection does it; used by the KCM and scheduler.

`LeaderElector.try_acquire_or_renew` is the state machine (fast-path renew, get/create, local observation time, takeover
with leaseTransitions + 1); `run` acquires (retrying every RetryPeriod with jitter 1.2), calls `on_started_leading`,
renews every RetryPeriod and gives up when no renewal succeeded for RenewDeadline. Validity of another holder's lease is
judged only by the *local* time since its record last changed, never by its renewTime. The lock is a small Protocol:
`LeaseLock` talks to the API server, `FakeLock` (next to it, for tests) keeps the record in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from lightkube.resources.coordination_v1 import Lease

from pykubeadm.client import ApiError, is_not_found, status_code

__all__ = [
    "FakeLock",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
    "LockConflict",
    "ResourceLock",
    "new_identity",
]

log = logging.getLogger(__name__)

#: Defaults of --leader-elect-lease-duration / -renew-deadline / -retry-period (seconds).
LEASE_DURATION = 15.0
RENEW_DEADLINE = 10.0
RETRY_PERIOD = 2.0
JITTER_FACTOR = 1.2
#: Retry period while the lock cannot be read (no API server yet).
UNREACHABLE_RETRY = 0.1


def new_identity() -> str:
    """`<hostname>_<uuid>`, the identity kube-controller-manager and kube-scheduler use."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaderElectionRecord:
    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    lease_transitions: int = 0


class LockConflict(Exception):
    """The lock changed since it was read (409) or already exists on create."""


class ResourceLock(Protocol):
    identity: str

    async def get(self) -> LeaderElectionRecord | None:
        """The current record, or None if the lock object does not exist."""

    async def create(self, record: LeaderElectionRecord) -> None: ...

    async def update(self, record: LeaderElectionRecord) -> None:
        """Write over the last object read/written (optimistic concurrency); LockConflict on 409."""

    def describe(self) -> str: ...


class LeaderElector:
    def __init__(
        self,
        lock: ResourceLock,
        *,
        lease_duration: float = LEASE_DURATION,
        renew_deadline: float = RENEW_DEADLINE,
        retry_period: float = RETRY_PERIOD,
        clock: Callable[[], float] = time.monotonic,
        wallclock: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        on_new_leader: Callable[[str], None] | None = None,
    ):
        if not (lease_duration > renew_deadline > JITTER_FACTOR * retry_period > 0):
            raise ValueError("leader election needs leaseDuration > renewDeadline > 1.2 * retryPeriod > 0")
        self.lock = lock
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.clock = clock
        self.wallclock = wallclock
        self.sleep = sleep
        self.on_new_leader = on_new_leader
        self.observed: LeaderElectionRecord | None = None
        self.observed_time = 0.0
        self._reported_leader: str | None = None
        self._unreachable = False

    @property
    def identity(self) -> str:
        return self.lock.identity

    def is_leader(self) -> bool:
        return self.observed is not None and self.observed.holder_identity == self.identity

    def _observe(self, record: LeaderElectionRecord) -> None:
        self.observed = record
        self.observed_time = self.clock()
        if record.holder_identity != self._reported_leader:
            self._reported_leader = record.holder_identity
            if self.on_new_leader and record.holder_identity:
                self.on_new_leader(record.holder_identity)

    def _lease_valid(self, record: LeaderElectionRecord) -> bool:
        duration = record.lease_duration_seconds or self.lease_duration
        return self.observed_time + duration > self.clock()

    async def try_acquire_or_renew(self) -> bool:
        now = self.wallclock()
        mine = LeaderElectionRecord(self.identity, int(self.lease_duration), now, now, 0)

        # 1. fast path: we hold a lease we still believe valid; just renew it.
        if self.is_leader() and self.observed is not None and self._lease_valid(self.observed):
            renewed = replace(self.observed, renew_time=now, lease_duration_seconds=int(self.lease_duration))
            try:
                await self.lock.update(renewed)
                self._observe(renewed)
                return True
            except Exception as err:
                log.info("failed to renew lease %s: %s; falling back to slow path", self.lock.describe(), err)

        # 2. read (create if absent)
        try:
            old = await self.lock.get()
        except Exception as err:
            if not self._unreachable:
                log.info("error retrieving resource lock %s: %s", self.lock.describe(), err)
            self._unreachable = True
            return False
        self._unreachable = False
        if old is None:
            try:
                await self.lock.create(mine)
            except Exception as err:
                log.info("error initially creating leader election record: %s", err)
                return False
            self._observe(mine)
            return True

        # 3. remember when we saw the record change (local clock)
        if old != self.observed:
            self._observe(old)

        # 4. someone else holds a lease that has not expired by our observation
        if old.holder_identity and old.holder_identity != self.identity and self._lease_valid(old):
            return False

        # 5. take over (or keep) the lease
        if old.holder_identity == self.identity:
            record = replace(mine, acquire_time=old.acquire_time, lease_transitions=old.lease_transitions)
        else:
            record = replace(mine, lease_transitions=old.lease_transitions + 1)
        try:
            await self.lock.update(record)
        except Exception as err:
            log.info("failed to update lock %s: %s", self.lock.describe(), err)
            return False
        self._observe(record)
        return True

    async def acquire(self) -> None:
        """Return once we hold the lease (retry every RetryPeriod·[1, 2.2)).

        While the lock cannot be read at all (the API server is still starting, as right after `kubeadm init` writes
        the static Pods) retry every UNREACHABLE_RETRY instead: there is no holder to be polite to, and the
        controllers (BootstrapSigner, CSR signing) that a join waits for start only once we lead.
        """
        log.info("attempting to acquire leader lease %s...", self.lock.describe())
        while True:
            if await self.try_acquire_or_renew():
                log.info("successfully acquired lease %s", self.lock.describe())
                return
            if self._unreachable:
                await self.sleep(min(UNREACHABLE_RETRY, self.retry_period))
            else:
                await self.sleep(self.retry_period * (1 + random.random() * JITTER_FACTOR))

    async def renew(self) -> None:
        """Keep renewing; return when renewals failed for RenewDeadline (leadership lost)."""
        while True:
            started = self.clock()
            while True:
                if await self.try_acquire_or_renew():
                    break
                if self.clock() - started >= self.renew_deadline:
                    log.error("failed to renew lease %s: timed out waiting for the condition", self.lock.describe())
                    return
                await self.sleep(self.retry_period)
            await self.sleep(self.retry_period)

    async def run(self, lead: Callable[[], Awaitable[Any]]) -> None:
        """Acquire, run `lead()` while renewing; returns (after cancelling `lead`) when leadership is lost."""
        await self.acquire()

        async def leading() -> Any:  # create_task wants a coroutine; `lead()` may be any awaitable
            return await lead()

        task = asyncio.create_task(leading(), name="leading")
        renewer = asyncio.create_task(self.renew(), name="renew")
        try:
            done, _ = await asyncio.wait({task, renewer}, return_when=asyncio.FIRST_COMPLETED)
            if task in done and (error := task.exception()) is not None:
                raise error
        finally:
            for t in (task, renewer):
                t.cancel()
            for t in (task, renewer):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t


# --- locks -----------------------------------------------------------------------------------------------------------


def _micro(value: datetime | None) -> str | None:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if value else None


class LeaseLock:
    """The lock as a coordination.k8s.io/v1 Lease (`kube-system/kube-controller-manager`, …) through lightkube."""

    def __init__(self, client: Any, namespace: str, name: str, identity: str):
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self._lease: Any = None

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    @staticmethod
    def _to_record(lease: Any) -> LeaderElectionRecord:
        spec = lease.spec
        if spec is None:
            return LeaderElectionRecord()
        return LeaderElectionRecord(
            holder_identity=spec.holderIdentity or "",
            lease_duration_seconds=spec.leaseDurationSeconds or 0,
            acquire_time=spec.acquireTime,
            renew_time=spec.renewTime,
            lease_transitions=spec.leaseTransitions or 0,
        )

    def _spec(self, record: LeaderElectionRecord) -> dict[str, Any]:
        return {
            "holderIdentity": record.holder_identity,
            "leaseDurationSeconds": record.lease_duration_seconds,
            "acquireTime": _micro(record.acquire_time),
            "renewTime": _micro(record.renew_time),
            "leaseTransitions": record.lease_transitions,
        }

    async def get(self) -> LeaderElectionRecord | None:
        try:
            self._lease = await self.client.get(Lease, self.name, namespace=self.namespace)
        except ApiError as err:
            if is_not_found(err):
                return None
            raise
        return self._to_record(self._lease)

    async def create(self, record: LeaderElectionRecord) -> None:
        body = Lease.from_dict(
            {"metadata": {"name": self.name, "namespace": self.namespace}, "spec": self._spec(record)}
        )
        try:
            self._lease = await self.client.create(body)
        except ApiError as err:
            if status_code(err) == 409:
                raise LockConflict(str(err)) from err
            raise

    async def update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise LockConflict("lease not initialized, call get or create first")
        body = self._lease.to_dict()
        body["spec"] = self._spec(record)
        try:
            self._lease = await self.client.replace(Lease.from_dict(body))
        except ApiError as err:
            if status_code(err) == 409:
                raise LockConflict(str(err)) from err
            raise


class FakeLock:
    """An in-memory lock; several FakeLocks sharing one `store` dict behave like clients of one API server."""

    def __init__(self, store: dict[str, Any], identity: str, name: str = "lock"):
        self.store = store
        self.identity = identity
        self.name = name
        self._version: int | None = None
        self.fail = False  # simulate an unreachable API server

    def describe(self) -> str:
        return f"fake/{self.name}"

    def _check(self) -> None:
        if self.fail:
            raise ConnectionError("API server unreachable")

    async def get(self) -> LeaderElectionRecord | None:
        self._check()
        entry = self.store.get(self.name)
        if entry is None:
            return None
        self._version = entry[0]
        return entry[1]

    async def create(self, record: LeaderElectionRecord) -> None:
        self._check()
        if self.name in self.store:
            raise LockConflict("already exists")
        self.store[self.name] = (1, record)
        self._version = 1

    async def update(self, record: LeaderElectionRecord) -> None:
        self._check()
        entry = self.store.get(self.name)
        if entry is None or entry[0] != self._version:
            raise LockConflict("the object has been modified")
        self.store[self.name] = (entry[0] + 1, record)
        self._version = entry[0] + 1
