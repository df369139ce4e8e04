"""The job controller's failure back-off (10 s, doubling) against our apiserver, in-process with an injected clock.

The test plays the kubelet (Pod status, with the container's finishedAt on the injected clock) and moves the clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from lightkube import AsyncClient
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Namespace, Pod, ServiceAccount
from lightkube.types import PatchType

from pykubeadm.client import async_client
from pykubeadm.controllers.job.controller import JobController
from pykubeadm.controllers.runtime import ControllerContext, cancel_and_wait, run_with_informers
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

NS = "job-backoff"


@dataclass
class Clock:
    now: float

    def __call__(self) -> float:
        return self.now


async def until(predicate: Callable[[], Any], timeout: float = 15, what: str = "condition") -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


@pytest.fixture
async def env(api: ApiServer) -> AsyncIterator[tuple[AsyncClient, Clock, JobController]]:
    client = async_client(api.kubeconfig())
    await client.create(Namespace.from_dict({"metadata": {"name": NS}}))
    await client.create(ServiceAccount.from_dict({"metadata": {"name": "default", "namespace": NS}}))
    clock = Clock(time.time())
    ctx = ControllerContext(client=client, clock=clock)
    ctl = JobController(ctx)
    task = asyncio.create_task(run_with_informers(ctx, [ctl]))
    try:
        await asyncio.wait_for(ctl.wait_synced(), 15)
        yield client, clock, ctl
    finally:
        await cancel_and_wait([task])
        await client.close()


async def live_pods(client: AsyncClient) -> list[Pod]:
    return [
        p
        async for p in client.list(Pod, namespace=NS)
        if p.metadata.deletionTimestamp is None and (p.status is None or p.status.phase not in ("Failed", "Succeeded"))
    ]


async def fail(client: AsyncClient, pod: Pod, at: float) -> None:
    finished = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {
        "phase": "Failed",
        "containerStatuses": [
            {
                "name": "main",
                "image": "busybox",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": finished}},
            }
        ],
    }
    await client.patch(Pod.Status, pod.metadata.name, {"status": status}, namespace=NS, patch_type=PatchType.MERGE)


async def test_replacements_wait_ten_seconds_doubling(env: tuple[AsyncClient, Clock, JobController]) -> None:
    client, clock, ctl = env
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "flaky", "namespace": NS},
        "spec": {
            "backoffLimit": 2,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}},
        },
    }
    await client.create(Job.from_dict(job))
    seen: set[str] = set()

    async def new_pod() -> Pod | None:
        pods = [p for p in await live_pods(client) if p.metadata.name not in seen]
        return pods[0] if pods else None

    async def failed_count(n: int) -> bool:
        return ((await client.get(Job, "flaky", namespace=NS)).status.failed or 0) >= n

    for attempt, delay in enumerate((10, 20)):
        pod = await until(new_pod, what=f"pod #{attempt + 1}")
        seen.add(pod.metadata.name)
        t_fail = clock.now
        await fail(client, pod, t_fail)
        await until(lambda n=attempt + 1: failed_count(n), what=f"{attempt + 1} failure(s) counted")
        # just before the back-off ends: a sync at that moment starts nothing
        clock.now = t_fail + delay - 1
        await ctl.sync(f"{NS}/flaky")
        assert await new_pod() is None
        clock.now = t_fail + delay + 1
        ctl.queue.add(f"{NS}/flaky")
    pod = await until(new_pod, what="pod #3")
    await fail(client, pod, clock.now)

    async def failed() -> Any:
        j = await client.get(Job, "flaky", namespace=NS)
        conds = {c.type: c for c in j.status.conditions or [] if c.status == "True"}
        return conds.get("Failed")

    cond = await until(failed, what="Failed")
    assert cond.reason == "BackoffLimitExceeded"
