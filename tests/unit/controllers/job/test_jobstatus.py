"""Job accounting without an apiserver: indexes, back-off, failures, conditions, wanted Pods and the Pod template."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pykubeadm.controllers.job.status import (
    TRACKING_FINALIZER,
    backoff_remaining,
    format_indexes,
    is_pod_failed,
    match_pod_failure_policy,
    new_condition,
    parse_indexes,
    past_deadline,
    pod_for_job,
    restarts_exceed_limit,
    set_condition,
    wanted_active,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def test_completed_indexes_round_trip() -> None:
    assert parse_indexes("1,3-5,7") == {1, 3, 4, 5, 7}
    assert parse_indexes("0-9", completions=4) == {0, 1, 2, 3}
    assert parse_indexes("") == set()
    assert format_indexes({7, 1, 3, 4, 5}) == "1,3-5,7"
    assert format_indexes(range(3)) == "0-2"
    assert format_indexes([]) == ""


@pytest.mark.parametrize(
    ("failures", "since_last", "left"),
    [
        (0, 0, 0),
        (1, 0, 10),  # 10 s after the first failure
        (1, 4, 6),
        (2, 0, 20),  # doubling
        (3, 0, 40),
        (6, 0, 320),
        (7, 0, 360),  # capped at 6 minutes
        (12, 0, 360),
        (2, 25, 0),  # already waited long enough
    ],
)
def test_failure_backoff(failures: int, since_last: int, left: int) -> None:
    now = T0 + timedelta(seconds=since_last)
    assert backoff_remaining(failures, T0, now) == timedelta(seconds=left)


def pod(phase: str = "Running", deleting: bool = False) -> dict:
    meta = {"name": "p", "deletionTimestamp": "2024-01-01T00:00:00Z"} if deleting else {"name": "p"}
    return {"metadata": meta, "status": {"phase": phase}}


def test_failed_pods() -> None:
    spec = {"podReplacementPolicy": "TerminatingOrFailed"}
    assert is_pod_failed(pod("Failed"), spec)
    assert not is_pod_failed(pod("Running"), spec)
    assert is_pod_failed(pod("Running", deleting=True), spec)  # deleted before finishing counts as a failure
    assert not is_pod_failed(pod("Succeeded", deleting=True), spec)
    assert not is_pod_failed(pod("Running", deleting=True), {"podReplacementPolicy": "Failed"})


def test_restarts_count_toward_the_backoff_limit_with_on_failure() -> None:
    spec = {"backoffLimit": 3, "template": {"spec": {"restartPolicy": "OnFailure"}}}
    restarted = {"status": {"phase": "Running", "containerStatuses": [{"restartCount": 2}]}}
    assert not restarts_exceed_limit(spec, [restarted])
    assert restarts_exceed_limit(spec, [restarted, restarted])
    zero = {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "OnFailure"}}}
    assert restarts_exceed_limit(zero, [{"status": {"phase": "Pending", "containerStatuses": [{"restartCount": 1}]}}])
    never = {"backoffLimit": 3, "template": {"spec": {"restartPolicy": "Never"}}}
    assert not restarts_exceed_limit(never, [restarted, restarted])


def test_wanted_active_pods() -> None:
    assert wanted_active({"parallelism": 2, "completions": 3}, 0, None) == 2
    assert wanted_active({"parallelism": 2, "completions": 3}, 2, None) == 1
    assert wanted_active({"parallelism": 2, "completions": 3}, 3, None) == 0
    assert wanted_active({"parallelism": 4}, 0, None) == 4  # work queue: until one succeeds
    assert wanted_active({"parallelism": 4}, 1, None) == 0
    assert wanted_active({"parallelism": 3, "completions": 5}, 0, 2) == 2  # Indexed: 2 indexes left


def test_deadline() -> None:
    spec = {"activeDeadlineSeconds": 30}
    status = {"startTime": "2024-01-01T00:00:00Z"}
    assert past_deadline(spec, status, T0 + timedelta(seconds=10)) == (False, 20.0)
    assert past_deadline(spec, status, T0 + timedelta(seconds=30))[0]
    assert past_deadline({}, status, T0) == (False, None)


def test_conditions_keep_transition_time_until_status_changes() -> None:
    status: dict = {}
    assert set_condition(status, new_condition("Suspended", "JobSuspended", "Job suspended", T0))
    assert not set_condition(
        status, new_condition("Suspended", "JobSuspended", "Job suspended", T0 + timedelta(seconds=5))
    )
    later = T0 + timedelta(seconds=9)
    assert set_condition(status, new_condition("Suspended", "JobResumed", "Job resumed", later, status="False"))
    (cond,) = status["conditions"]
    assert (cond["status"], cond["reason"], cond["lastTransitionTime"]) == (
        "False",
        "JobResumed",
        "2024-01-01T00:00:09Z",
    )


def job(mode: str = "NonIndexed") -> dict:
    return {
        "metadata": {"name": "work", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "completionMode": mode,
            "template": {
                "metadata": {"labels": {"batch.kubernetes.io/job-name": "work"}},
                "spec": {"containers": [{"name": "c", "image": "busybox", "env": [{"name": "A", "value": "1"}]}]},
            },
        },
    }


def test_pod_for_a_non_indexed_job() -> None:
    p = pod_for_job(job(), None)
    meta = p["metadata"]
    assert meta["generateName"] == "work-"
    assert meta["finalizers"] == [TRACKING_FINALIZER]
    assert meta["labels"] == {"batch.kubernetes.io/job-name": "work"}
    assert meta["ownerReferences"][0] == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "work",
        "uid": "u-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert "hostname" not in p["spec"]


def test_pod_for_an_indexed_job() -> None:
    p = pod_for_job(job("Indexed"), 4)
    meta = p["metadata"]
    assert meta["generateName"] == "work-4-"
    assert meta["annotations"]["batch.kubernetes.io/job-completion-index"] == "4"
    assert meta["labels"]["batch.kubernetes.io/job-completion-index"] == "4"
    assert p["spec"]["hostname"] == "work-4"
    env = p["spec"]["containers"][0]["env"]
    assert env[0] == {"name": "A", "value": "1"}
    assert env[1]["name"] == "JOB_COMPLETION_INDEX"
    assert env[1]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['batch.kubernetes.io/job-completion-index']"
    # the template itself is not changed
    assert "hostname" not in job("Indexed")["spec"]["template"]["spec"]


def failed_pod(code: int, container: str = "main", conditions: list | None = None) -> dict:
    return {
        "metadata": {"name": "p-1", "namespace": "ns"},
        "status": {
            "phase": "Failed",
            "conditions": conditions or [],
            "containerStatuses": [{"name": container, "state": {"terminated": {"exitCode": code}}}],
        },
    }


def test_pod_failure_policy_rules_match_in_order() -> None:
    policy = {
        "rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
        ]
    }
    disrupted = failed_pod(42, conditions=[{"type": "DisruptionTarget", "status": "True"}])
    assert match_pod_failure_policy(policy, disrupted) == (
        "Ignore",
        "Pod ns/p-1 has condition DisruptionTarget matching Ignore rule at index 0",
    )
    assert match_pod_failure_policy(policy, failed_pod(42)) == (
        "FailJob",
        "Container main for pod ns/p-1 failed with exit code 42 matching FailJob rule at index 1",
    )
    assert match_pod_failure_policy(policy, failed_pod(42, container="sidecar"))[0] == "Count"
    assert match_pod_failure_policy(policy, failed_pod(2)) == (None, None)
