"""The work queue and worker loop: de-duplication, no concurrent processing of a key, retries by exception class."""

from __future__ import annotations

import asyncio

from pykubeadm.controllers.runtime import Controller, ControllerContext, PermanentError, TemporaryError, WorkQueue


async def test_queue_deduplicates_and_defers_keys_being_processed() -> None:
    q = WorkQueue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    key = await q.get()
    assert key == "a"
    q.add("a")  # while processing: remembered, not handed out twice
    assert await q.get() == "b"
    got = asyncio.create_task(q.get())
    await asyncio.sleep(0.01)
    assert not got.done()
    q.done("a")
    assert await asyncio.wait_for(got, 1) == "a"


async def test_backoff_grows_and_forget_resets() -> None:
    q = WorkQueue(base=0.01, cap=0.05)
    assert [q.backoff("k") for _ in range(5)] == [0.01, 0.02, 0.04, 0.05, 0.05]
    q.forget("k")
    assert q.backoff("k") == 0.01


async def test_add_after() -> None:
    q = WorkQueue()
    q.add_after("x", 0.05)
    assert len(q) == 0
    assert await asyncio.wait_for(q.get(), 1) == "x"


class Flaky(Controller):
    name = "flaky"

    def setup(self) -> None:
        self.calls: dict[str, int] = {}

    async def sync(self, key: str) -> None:
        self.calls[key] = self.calls.get(key, 0) + 1
        if key == "temporary" and self.calls[key] < 3:
            raise TemporaryError("not yet")
        if key == "permanent":
            raise PermanentError("never")
        if key == "crash" and self.calls[key] < 2:
            raise RuntimeError("boom")


async def test_worker_retries_temporary_and_unexpected_errors_but_not_permanent() -> None:
    ctl = Flaky(ControllerContext(client=None))  # type: ignore[arg-type]
    ctl.queue = WorkQueue(base=0.001)
    for key in ("temporary", "permanent", "crash", "ok"):
        ctl.queue.add(key)
    task = asyncio.create_task(ctl.run())
    await asyncio.sleep(0.3)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert ctl.calls == {"temporary": 3, "permanent": 1, "crash": 2, "ok": 1}
