"""job and ttl-after-finished controllers against our apiserver; the test plays the kubelet by patching Pod status.

No scheduler or kubelet runs: Pods stay unbound, and the test moves them to Succeeded or Failed itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from harness import ControllerManager, wait_until
from lightkube import ApiError, Client
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Event, Pod, ServiceAccount
from lightkube.types import PatchType

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

NS = "jobs"
TRACKING = "batch.kubernetes.io/job-tracking"


@pytest.fixture(scope="module")
def client(api: ApiServer, start_kcm: Callable[..., ControllerManager]) -> Iterator[Client]:
    api.kubectl("create", "namespace", NS)
    start_kcm(extra_flags=["--controllers=job,ttl-after-finished,garbagecollector,serviceaccount"])
    with sync_client(api.kubeconfig()) as c:
        wait_until(lambda: list(c.list(ServiceAccount, namespace=NS)), 20, interval=0.2, what="default ServiceAccount")
        yield c


def job_manifest(name: str, **spec: Any) -> Job:
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox", "command": ["true"]}],
                }
            },
            **spec,
        },
    }
    return Job.from_dict(body)


def pods_of(client: Client, job: str) -> list[Pod]:
    return list(client.list(Pod, namespace=NS, labels={"batch.kubernetes.io/job-name": job}))


def running(client: Client, job: str) -> list[Pod]:
    return [
        p
        for p in pods_of(client, job)
        if p.metadata.deletionTimestamp is None and (p.status is None or p.status.phase not in ("Succeeded", "Failed"))
    ]


def finish(client: Client, pod: Pod, phase: str, code: int | None = None) -> None:
    """What the kubelet reports when the container exits."""
    code = code if code is not None else 0 if phase == "Succeeded" else 1
    status = {
        "phase": phase,
        "containerStatuses": [
            {
                "name": "main",
                "image": "busybox",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Completed" if code == 0 else "Error",
                        "startedAt": "2026-01-01T00:00:00Z",
                        "finishedAt": "2026-01-01T00:00:01Z",
                    }
                },
            }
        ],
    }
    client.patch(Pod.Status, pod.metadata.name, {"status": status}, namespace=NS, patch_type=PatchType.MERGE)


def condition(job: Job, ctype: str) -> Any:
    return next((c for c in (job.status.conditions or []) if c.type == ctype and c.status == "True"), None)


def wait_condition(client: Client, name: str, ctype: str, timeout: float = 30) -> Job:
    return wait_until(
        lambda: (lambda j: j if condition(j, ctype) else None)(client.get(Job, name, namespace=NS)),
        timeout,
        interval=0.1,
        what=f"job {name} {ctype}",
    )


def events_for(client: Client, name: str) -> list[tuple[str, str, str]]:
    return [
        (e.type, e.reason, e.message)
        for e in client.list(Event, namespace=NS)
        if e.involvedObject.name == name and e.involvedObject.kind == "Job"
    ]


def test_completions_with_parallelism_never_exceed_parallelism_then_complete(client: Client) -> None:
    client.create(job_manifest("pi", completions=3, parallelism=2))
    succeeded = 0
    while succeeded < 3:
        active = wait_until(lambda: running(client, "pi"), 20, interval=0.1, what="an active pod")
        assert len(active) <= 2, [p.metadata.name for p in active]
        finish(client, active[0], "Succeeded")
        succeeded += 1
        if succeeded < 3:
            wait_until(
                lambda n=succeeded: (client.get(Job, "pi", namespace=NS).status.succeeded or 0) >= n,
                20,
                interval=0.1,
                what=f"{succeeded} succeeded",
            )
            assert len(running(client, "pi")) <= 2
    job = wait_condition(client, "pi", "Complete")
    complete = condition(job, "Complete")
    assert (complete.reason, complete.message) == ("CompletionsReached", "Reached expected number of succeeded pods")
    assert condition(job, "SuccessCriteriaMet") is not None
    assert job.status.succeeded == 3
    assert not job.status.failed
    assert job.status.completionTime is not None and job.status.startTime is not None
    assert job.status.active in (None, 0)
    pods = pods_of(client, "pi")
    assert len(pods) == 3
    for pod in pods:
        assert re.fullmatch(r"pi-[a-z0-9]{5}", pod.metadata.name), pod.metadata.name
        assert TRACKING not in (pod.metadata.finalizers or [])
        (ref,) = pod.metadata.ownerReferences
        assert (ref.kind, ref.name, ref.uid, ref.controller) == ("Job", "pi", job.metadata.uid, True)
    reasons = wait_until(
        lambda: (lambda ev: ev if ("Normal", "Completed", "Job completed") in ev else None)(events_for(client, "pi")),
        10,
        interval=0.2,
        what="Completed event",
    )
    assert sum(1 for e in reasons if e[1] == "SuccessfulCreate") == 3


def test_failing_job_stops_at_backoff_limit(client: Client) -> None:
    client.create(job_manifest("fails", backoffLimit=0))
    (pod,) = wait_until(lambda: running(client, "fails"), 20, interval=0.1, what="a pod")
    finish(client, pod, "Failed")
    job = wait_condition(client, "fails", "Failed")
    failed = condition(job, "Failed")
    assert (failed.reason, failed.message) == ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert condition(job, "FailureTarget").reason == "BackoffLimitExceeded"
    assert job.status.failed == 1
    assert job.status.completionTime is None
    assert len(pods_of(client, "fails")) == 1  # no retry past the limit
    wait_until(
        lambda: (
            ("Warning", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
            in events_for(client, "fails")
        ),
        10,
        interval=0.2,
        what="BackoffLimitExceeded event",
    )


def test_indexed_job_gives_each_pod_its_index(client: Client) -> None:
    client.create(job_manifest("idx", completions=3, parallelism=3, completionMode="Indexed"))
    pods = wait_until(lambda: (lambda ps: ps if len(ps) == 3 else None)(running(client, "idx")), 20, interval=0.1)
    by_index = {}
    for pod in pods:
        index = pod.metadata.annotations["batch.kubernetes.io/job-completion-index"]
        assert pod.metadata.labels["batch.kubernetes.io/job-completion-index"] == index
        assert re.fullmatch(rf"idx-{index}-[a-z0-9]{{5}}", pod.metadata.name), pod.metadata.name
        assert pod.spec.hostname == f"idx-{index}"
        env = {e.name: e for e in pod.spec.containers[0].env}
        assert env["JOB_COMPLETION_INDEX"].valueFrom.fieldRef.fieldPath == (
            "metadata.labels['batch.kubernetes.io/job-completion-index']"
        )
        by_index[int(index)] = pod
    assert sorted(by_index) == [0, 1, 2]
    finish(client, by_index[1], "Succeeded")
    wait_until(
        lambda: client.get(Job, "idx", namespace=NS).status.completedIndexes == "1", 20, interval=0.1, what="index 1"
    )
    finish(client, by_index[0], "Succeeded")
    finish(client, by_index[2], "Succeeded")
    job = wait_condition(client, "idx", "Complete")
    assert job.status.completedIndexes == "0-2"
    assert job.status.succeeded == 3


def test_active_deadline_fails_the_job(client: Client) -> None:
    client.create(job_manifest("slow", activeDeadlineSeconds=1))
    job = wait_condition(client, "slow", "Failed", timeout=30)
    failed = condition(job, "Failed")
    assert (failed.reason, failed.message) == ("DeadlineExceeded", "Job was active longer than specified deadline")
    wait_until(lambda: not running(client, "slow"), 20, interval=0.1, what="pods removed")


def test_suspended_job_runs_nothing_until_resumed(client: Client) -> None:
    client.create(job_manifest("later", suspend=True))
    job = wait_condition(client, "later", "Suspended")
    assert condition(job, "Suspended").reason == "JobSuspended"
    assert not pods_of(client, "later")
    client.patch(Job, "later", {"spec": {"suspend": False}}, namespace=NS, patch_type=PatchType.MERGE)
    (pod,) = wait_until(lambda: running(client, "later"), 20, interval=0.1, what="a pod after resume")

    def resumed() -> Any:
        job = client.get(Job, "later", namespace=NS)
        cond = next(c for c in job.status.conditions if c.type == "Suspended")
        return cond if cond.status == "False" else None

    cond = wait_until(resumed, 20, interval=0.1, what="Suspended condition False")
    assert (cond.reason, cond.message) == ("JobResumed", "Job resumed")
    finish(client, pod, "Succeeded")
    wait_condition(client, "later", "Complete")


def test_finished_job_is_deleted_after_its_ttl(client: Client) -> None:
    client.create(job_manifest("shortlived", ttlSecondsAfterFinished=1))
    (pod,) = wait_until(lambda: running(client, "shortlived"), 20, interval=0.1, what="a pod")
    finish(client, pod, "Succeeded")
    wait_condition(client, "shortlived", "Complete")

    def gone() -> bool:
        try:
            client.get(Job, "shortlived", namespace=NS)
        except ApiError as err:
            return err.status.code == 404
        return False

    wait_until(gone, 30, interval=0.2, what="job deleted after its TTL")
    wait_until(lambda: not pods_of(client, "shortlived"), 30, interval=0.2, what="its pods deleted")


@pytest.mark.parametrize("cascade", ["background", "foreground"])
def test_deleting_a_running_job_deletes_its_pods(api: ApiServer, client: Client, cascade: str) -> None:
    name = f"gone-{cascade[:2]}"
    client.create(job_manifest(name, parallelism=2, completions=4))
    wait_until(lambda: len(running(client, name)) == 2, 20, interval=0.1, what="two pods")
    api.kubectl("delete", "job", name, "-n", NS, f"--cascade={cascade}", timeout=60)
    # the tracking finalizer must not keep them Terminating forever
    wait_until(lambda: not pods_of(client, name), 30, interval=0.2, what="pods deleted")


def test_pod_failure_policy_fails_the_job_on_a_matching_exit_code(client: Client) -> None:
    policy = {
        "rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
        ]
    }
    client.create(job_manifest("picky", backoffLimit=0, podFailurePolicy=policy))
    (first,) = wait_until(lambda: running(client, "picky"), 20, interval=0.1, what="a pod")
    finish(client, first, "Failed", code=3)  # ignored: replaced, not counted against backoffLimit 0
    (second,) = wait_until(
        lambda: [p for p in running(client, "picky") if p.metadata.name != first.metadata.name],
        20,
        interval=0.1,
        what="a replacement pod",
    )
    finish(client, second, "Failed", code=42)
    job = wait_condition(client, "picky", "Failed")
    failed = condition(job, "Failed")
    assert failed.reason == "PodFailurePolicy"
    assert failed.message == (
        f"Container main for pod {NS}/{second.metadata.name} failed with exit code 42 matching FailJob rule at index 0"
    )
    assert job.status.failed == 1
