"""The machinery every controller runs on: a de-duplicating, rate-limited work queue, shared informers, worker loops.

Controllers subclass `Controller`, register informer handlers that enqueue keys in `setup()`, and implement
`sync(key)`. `sync` signals retries with the exception classes (house rule 7): `TemporaryError` (retry, optionally after
a delay), `PermanentError` (log and drop the key); any other exception is treated as temporary.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lightkube import AsyncClient

from pykubeadm.client import Informer
from pykubeadm.controllers.metrics import ComponentMetrics, QueueMetrics

__all__ = [
    "Controller",
    "ControllerContext",
    "ControllerStartError",
    "PermanentError",
    "TemporaryError",
    "WorkQueue",
    "cancel_and_wait",
    "run_with_informers",
]

log = logging.getLogger(__name__)


class TemporaryError(Exception):
    """Retry the key: after `delay` seconds if given, else with the queue's per-key exponential backoff."""

    def __init__(self, message: str, delay: float | None = None):
        super().__init__(message)
        self.delay = delay


class PermanentError(Exception):
    """The key cannot succeed as it is; log it and stop retrying until the object changes."""


class ControllerStartError(Exception):
    """A controller cannot start (kube-controller-manager logs "Error starting controllers" and exits 1)."""


class WorkQueue:
    """client-go's rate-limited work queue: a key is queued at most once and never processed by two workers at once.

    Backoff per key: `base * 2**failures`, capped at `cap` seconds; `forget` resets it. With `metrics`, the queue
    reports client-go's workqueue_* series (controllers/metrics.py).
    """

    def __init__(self, base: float = 0.005, cap: float = 30.0, metrics: QueueMetrics | None = None):
        self._queue: asyncio.Queue[Hashable] = asyncio.Queue()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._failures: dict[Hashable, int] = {}
        self._timers: dict[Hashable, asyncio.TimerHandle] = {}
        self._base = base
        self._cap = cap
        self._shutdown = False
        self._metrics = metrics

    def __len__(self) -> int:
        return len(self._dirty)

    def add(self, key: Hashable) -> None:
        if self._shutdown or key in self._dirty:
            return
        if self._metrics is not None:
            self._metrics.add(key)
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.put_nowait(key)

    def add_after(self, key: Hashable, delay: float) -> None:
        """Add `key` after `delay` seconds (an earlier pending timer for the key wins)."""
        if self._metrics is not None:
            self._metrics.retry()
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        existing = self._timers.get(key)
        if existing is not None and existing.when() <= loop.time() + delay:
            return
        if existing is not None:
            existing.cancel()

        def fire() -> None:
            self._timers.pop(key, None)
            self.add(key)

        self._timers[key] = loop.call_later(delay, fire)

    def backoff(self, key: Hashable) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        return float(min(self._cap, self._base * (2**failures)))

    def add_rate_limited(self, key: Hashable) -> None:
        self.add_after(key, self.backoff(key))

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: Hashable) -> int:
        return self._failures.get(key, 0)

    def delayed_keys(self) -> list[Hashable]:
        """The keys waiting to be added after a delay (backoff)."""
        return list(self._timers)

    async def get(self) -> Hashable:
        key = await self._queue.get()
        self._dirty.discard(key)
        self._processing.add(key)
        if self._metrics is not None:
            self._metrics.get(key)
        return key

    def done(self, key: Hashable) -> None:
        self._processing.discard(key)
        if self._metrics is not None:
            self._metrics.done(key)
        if key in self._dirty:
            self._queue.put_nowait(key)

    def shutdown(self) -> None:
        self._shutdown = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()


@dataclass
class ControllerContext:
    """What controllers share: the API client, shared informers, the parsed flags, and a clock."""

    client: AsyncClient
    options: Any = None
    clock: Callable[[], float] = time.time
    #: service account name → client writing as it (None: everything uses `client`)
    client_for: Callable[[str], AsyncClient] | None = None
    #: the component's metrics: each controller's queue reports workqueue_*{name=<controller>} there
    metrics: ComponentMetrics | None = None
    _informers: dict[tuple[Any, ...], Informer[Any]] = field(default_factory=dict)

    def informer(
        self, res: type, *, namespace: str | None = None, fields: dict[str, str] | None = None
    ) -> Informer[Any]:
        """The shared informer for (resource, namespace, field selector); created on first use."""
        key = (res, namespace, tuple(sorted((fields or {}).items())))
        if key not in self._informers:
            self._informers[key] = Informer(self.client, res, namespace=namespace, fields=fields)
        return self._informers[key]

    @property
    def informers(self) -> list[Informer[Any]]:
        return list(self._informers.values())


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel every task, then wait for each to end, swallowing what they raise (shutting down a group of tasks)."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


class Controller:
    """Base class: `setup()` wires informers to `self.queue`; `sync(key)` reconciles one key."""

    #: the name used by --controllers
    name: str = ""
    #: the kube-system ServiceAccount it writes as with --use-service-account-credentials
    service_account: str = ""
    workers: int = 1

    def __init__(self, ctx: ControllerContext):
        self.ctx = ctx
        self.client = ctx.client_for(self.service_account) if ctx.client_for and self.service_account else ctx.client
        self.queue = WorkQueue(metrics=ctx.metrics.queue(self.name) if ctx.metrics is not None else None)
        self.informers: list[Informer[Any]] = []
        self.setup()

    def setup(self) -> None:
        """Create informers with `self.watch(...)` and register handlers that enqueue keys."""

    def watch(self, res: type, handler: Callable[[str, Any, Any], None], **kwargs: Any) -> Informer[Any]:
        informer = self.ctx.informer(res, **kwargs)
        informer.add_handler(handler)
        self.informers.append(informer)
        return informer

    async def sync(self, key: Any) -> None:
        raise NotImplementedError

    async def wait_synced(self) -> None:
        for informer in self.informers:
            await informer.synced.wait()

    async def run(self) -> None:
        """Wait for the informers' first list, then run the workers (and `background()`) until cancelled."""
        await self.wait_synced()
        tasks = [asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}") for i in range(self.workers)]
        tasks.append(asyncio.create_task(self.background(), name=f"{self.name}-background"))
        try:
            await asyncio.gather(*tasks)
        finally:
            self.queue.shutdown()
            await cancel_and_wait(tasks)

    async def background(self) -> None:
        """Periodic work besides the queue (override; default: nothing)."""

    async def _worker(self) -> None:
        while True:
            key = await self.queue.get()
            try:
                await self.sync(key)
                self.queue.forget(key)
            except asyncio.CancelledError:
                raise
            except TemporaryError as err:
                log.debug("%s: %s: %s (will retry)", self.name, key, err)
                if err.delay is not None:
                    self.queue.add_after(key, err.delay)
                else:
                    self.queue.add_rate_limited(key)
            except PermanentError as err:
                log.warning("%s: %s: %s", self.name, key, err)
                self.queue.forget(key)
            except Exception as err:
                log.warning("%s: error syncing %r: %s", self.name, key, err, exc_info=log.isEnabledFor(logging.DEBUG))
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)


async def run_with_informers(ctx: ControllerContext, controllers: Sequence[Controller]) -> None:
    """Run the context's shared informers and `controllers` until cancelled or one fails; then stop them all."""
    tasks = [asyncio.create_task(inf.run(), name=f"informer-{inf.res.__name__}") for inf in ctx.informers]
    tasks += [asyncio.create_task(ctl.run(), name=ctl.name) for ctl in controllers]
    try:
        await asyncio.gather(*tasks)
    finally:
        await cancel_and_wait(tasks)
