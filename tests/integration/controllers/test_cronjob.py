"""The cronjob controller against our apiserver, run in-process with an injected clock (no real minute waits).

The test plays the job controller: it marks the Jobs the CronJob starts Complete or Failed through jobs/status.
After moving the clock it wakes the controller's queue, as the controller's own timer would at that moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from lightkube import AsyncClient
from lightkube.resources.batch_v1 import CronJob, Job
from lightkube.resources.core_v1 import Event, Namespace
from lightkube.types import PatchType

from pykubeadm.client import async_client
from pykubeadm.controllers.cronjob.controller import SCHEDULED_TIMESTAMP_ANNOTATION, CronJobController
from pykubeadm.controllers.runtime import ControllerContext, cancel_and_wait, run_with_informers
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration


@dataclass
class Clock:
    now: float

    def __call__(self) -> float:
        return self.now


@dataclass
class Env:
    client: AsyncClient
    clock: Clock
    ctl: CronJobController
    ns: str
    #: the first whole minute after the CronJobs were created
    minute: int

    def at(self, minute_offset: int, seconds: int = 5) -> None:
        """Move the clock to `seconds` past the minute `minute_offset` minutes after `self.minute`, wake the queue."""
        self.clock.now = (self.minute + minute_offset) * 60 + seconds
        for obj in self.ctl.cronjobs.items():
            self.ctl.queue.add(f"{obj.metadata.namespace}/{obj.metadata.name}")


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
async def env(api: ApiServer, request: pytest.FixtureRequest) -> AsyncIterator[Env]:
    client = async_client(api.kubeconfig())
    ns = f"cron-{request.node.name.split('[')[0].removeprefix('test_').replace('_', '-')[:40]}"
    await client.create(Namespace.from_dict({"metadata": {"name": ns}}))
    clock = Clock(time.time())
    ctx = ControllerContext(client=client, clock=clock)
    ctl = CronJobController(ctx)
    task = asyncio.create_task(run_with_informers(ctx, [ctl]))
    try:
        await asyncio.wait_for(ctl.wait_synced(), 15)
        yield Env(client, clock, ctl, ns, int(time.time()) // 60 + 1)
    finally:
        await cancel_and_wait([task])
        with contextlib.suppress(Exception):
            await client.delete(Namespace, ns)
        await client.close()


def cronjob(name: str, ns: str, **spec: Any) -> CronJob:
    return CronJob.from_dict(
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "schedule": "* * * * *",
                "jobTemplate": {
                    "metadata": {"labels": {"team": "a"}},
                    "spec": {
                        "template": {
                            "spec": {
                                "restartPolicy": "OnFailure",
                                "containers": [{"name": "c", "image": "busybox", "command": ["date"]}],
                            }
                        }
                    },
                },
                **spec,
            },
        }
    )


async def jobs(env: Env) -> dict[str, Job]:
    return {j.metadata.name: j async for j in env.client.list(Job, namespace=env.ns)}


async def job_names(env: Env) -> set[str]:
    return set(await jobs(env))


async def finish(env: Env, name: str, ctype: str = "Complete") -> None:
    now = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {
        "startTime": now,
        "conditions": [{"type": ctype, "status": "True", "lastTransitionTime": now, "lastProbeTime": now}],
    }
    if ctype == "Complete":
        status["completionTime"] = now
        status["succeeded"] = 1
    else:
        status["failed"] = 1
    await env.client.patch(Job.Status, name, {"status": status}, namespace=env.ns, patch_type=PatchType.MERGE)


async def cj_status(env: Env, name: str) -> Any:
    return (await env.client.get(CronJob, name, namespace=env.ns)).status


async def events(env: Env, name: str) -> list[tuple[str, str]]:
    out = []
    async for e in env.client.list(Event, namespace=env.ns):
        if e.involvedObject.name == name:
            out.append((e.reason, e.message))
    return out


async def test_job_created_for_each_schedule_time(env: Env) -> None:
    cj = await env.client.create(cronjob("tick", env.ns))
    env.at(0)
    first = f"tick-{env.minute}"
    await until(lambda: _has(env, first), what="first job")
    job = (await jobs(env))[first]
    assert job.metadata.labels["team"] == "a"
    assert job.metadata.annotations[SCHEDULED_TIMESTAMP_ANNOTATION] == _rfc3339(env.minute * 60)
    (ref,) = job.metadata.ownerReferences
    assert (ref.kind, ref.name, ref.uid, ref.controller, ref.blockOwnerDeletion) == (
        "CronJob",
        "tick",
        cj.metadata.uid,
        True,
        True,
    )
    status = await until(lambda: _status_with_active(env, "tick"), what="status.active")
    assert [a.name for a in status.active] == [first]
    assert status.lastScheduleTime.timestamp() == env.minute * 60
    # Allow: the next minute starts another one while the first still runs
    env.at(1)
    await until(lambda: _has(env, f"tick-{env.minute + 1}"), what="second job")
    await finish(env, first)
    status = await until(lambda: _last_success(env, "tick"), what="lastSuccessfulTime")
    assert [a.name for a in status.active] == [f"tick-{env.minute + 1}"]
    assert await job_names(env) == {first, f"tick-{env.minute + 1}"}  # nothing for times before its creation
    assert ("SuccessfulCreate", f"Created job {first}") in await events(env, "tick")
    assert ("SawCompletedJob", f"Saw completed job: {first}, status: Complete") in await events(env, "tick")


async def test_forbid_skips_while_a_job_runs(env: Env) -> None:
    await env.client.create(cronjob("single", env.ns, concurrencyPolicy="Forbid"))
    env.at(0)
    await until(lambda: _has(env, f"single-{env.minute}"), what="first job")
    await until(lambda: _status_with_active(env, "single"), what="status.active")
    env.at(1)
    await until(
        lambda: _event(env, "single", "JobAlreadyActive"),
        what="JobAlreadyActive event",
    )
    assert await job_names(env) == {f"single-{env.minute}"}
    # once it finishes, the skipped schedule time (still unmet: lastScheduleTime did not move) starts, as in kube
    await finish(env, f"single-{env.minute}")
    await until(lambda: _has(env, f"single-{env.minute + 1}"), what="the skipped run, started late")
    status = await until(lambda: _last_success(env, "single"), what="job seen complete")
    assert status.lastScheduleTime.timestamp() == (env.minute + 1) * 60
    env.at(2)
    await until(lambda: _event_count(env, "single", "JobAlreadyActive", 2), what="second JobAlreadyActive")
    assert f"single-{env.minute + 2}" not in await job_names(env)


async def test_replace_deletes_the_running_job(env: Env) -> None:
    await env.client.create(cronjob("swap", env.ns, concurrencyPolicy="Replace"))
    env.at(0)
    await until(lambda: _has(env, f"swap-{env.minute}"), what="first job")
    await until(lambda: _status_with_active(env, "swap"), what="status.active")
    env.at(1)

    async def replaced() -> bool:
        names = await job_names(env)
        return names == {f"swap-{env.minute + 1}"}

    await until(replaced, what="first job replaced by the second")

    async def active_is_second() -> bool:
        # the status is written after the Jobs change, so the old Job may still be listed for a moment
        status = await _status_with_active(env, "swap")
        return bool(status) and [a.name for a in status.active] == [f"swap-{env.minute + 1}"]

    await until(active_is_second, what="status.active naming only the second job")


async def test_history_limits_prune_finished_jobs(env: Env) -> None:
    await env.client.create(cronjob("hist", env.ns, successfulJobsHistoryLimit=1, failedJobsHistoryLimit=1))
    for i, outcome in enumerate(["Complete", "Complete", "Failed", "Failed", "Complete"]):
        env.at(i)
        name = f"hist-{env.minute + i}"
        await until(lambda name=name: _has(env, name), what=name)
        await finish(env, name, outcome)
        await until(lambda name=name: _not_active(env, "hist", name), what=f"{name} seen finished")

    async def pruned() -> bool:
        return await job_names(env) == {f"hist-{env.minute + 3}", f"hist-{env.minute + 4}"}

    await until(pruned, what="only the newest successful and failed job kept")


async def test_suspend_and_starting_deadline(env: Env) -> None:
    await env.client.create(cronjob("paused", env.ns, suspend=True))
    await env.client.create(cronjob("late", env.ns, startingDeadlineSeconds=10))
    await until(lambda: _synced(env, 2), what="both CronJobs seen")
    # 30 s after the schedule time, beyond late's 10 s deadline: that run is missed (a sync at exactly that time)
    env.clock.now = env.minute * 60 + 30
    for name in ("late", "paused"):
        await env.ctl.sync(f"{env.ns}/{name}")
    assert await job_names(env) == set()
    env.at(1, seconds=2)
    await until(lambda: _has(env, f"late-{env.minute + 1}"), what="job within the deadline")
    # neither the missed run nor anything of the suspended CronJob was started
    assert await job_names(env) == {f"late-{env.minute + 1}"}


async def _synced(env: Env, count: int) -> bool:
    return len([o for o in env.ctl.cronjobs.items() if o.metadata.namespace == env.ns]) >= count


async def _has(env: Env, name: str) -> bool:
    return name in await job_names(env)


async def _status_with_active(env: Env, name: str) -> Any:
    status = await cj_status(env, name)
    return status if status and status.active else None


async def _last_success(env: Env, name: str) -> Any:
    status = await cj_status(env, name)
    return status if status and status.lastSuccessfulTime else None


async def _not_active(env: Env, cj: str, job: str) -> bool:
    status = await cj_status(env, cj)
    return not any(a.name == job for a in (status.active if status and status.active else []))


async def _event_count(env: Env, name: str, reason: str, count: int) -> bool:
    """At least `count` occurrences (a repeated event is one Event whose count grows, as client-go correlates)."""
    seen = 0
    async for e in env.client.list(Event, namespace=env.ns):
        if e.involvedObject.name == name and e.reason == reason:
            seen += e.count or 1
    return seen >= count


async def _event(env: Env, name: str, reason: str) -> bool:
    return any(r == reason for r, _ in await events(env, name))


def _rfc3339(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_kubectl_create_job_from_cronjob(api: ApiServer) -> None:
    api.kubectl("create", "namespace", "cron-manual")
    api.kubectl(
        "create", "cronjob", "nightly", "-n", "cron-manual", "--image=busybox", "--schedule=@daily", "--", "date"
    )
    api.kubectl("create", "job", "nightly-now", "-n", "cron-manual", "--from=cronjob/nightly")
    cj = json.loads(api.kubectl("get", "cronjob", "nightly", "-n", "cron-manual", "-o", "json").stdout)
    job = json.loads(api.kubectl("get", "job", "nightly-now", "-n", "cron-manual", "-o", "json").stdout)
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    (ref,) = job["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"]) == ("CronJob", "nightly", cj["metadata"]["uid"])
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["date"]
