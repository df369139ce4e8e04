"""batch/v1 Job and CronJob against a real apiserver: kubectl 1.33's protobuf `create job|cronjob`, tables, field
selectors, the generated selector, watch and delete with the official Python client."""

import json

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]


def header(out: str) -> list[str]:
    return out.splitlines()[0].split()


def test_job_and_cronjob_with_kubectl(api):
    api.kubectl("create", "job", "pi", "--image=busybox:1.36", "--", "echo", "hi")
    job = json.loads(api.kubectl("get", "job", "pi", "-o", "json").stdout)
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert labels["job-name"] == labels["batch.kubernetes.io/job-name"] == "pi" and labels["controller-uid"] == uid
    assert job["spec"]["backoffLimit"] == 6 and job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    out = api.kubectl("get", "jobs").stdout
    assert header(out) == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert out.splitlines()[1].split()[:3] == ["pi", "Running", "0/1"]
    api.kubectl("create", "cronjob", "hello", "--image=busybox:1.36", "--schedule=*/1 * * * *", "--", "date")
    out = api.kubectl("get", "cj").stdout
    assert header(out) == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert out.splitlines()[1].split()[:7] == ["hello", "*/1", "*", "*", "*", "*", "<none>"]
    api.kubectl("create", "job", "from-cj", "--from=cronjob/hello")
    made = json.loads(api.kubectl("get", "job", "from-cj", "-o", "json").stdout)
    assert made["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert made["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    bad = api.kubectl("create", "cronjob", "bad", "--image=busybox", "--schedule=nope", check=False)
    assert bad.returncode != 0 and 'spec.schedule: Invalid value: "nope"' in bad.stderr
    api.kubectl("patch", "job", "pi", "--type=merge", "-p", '{"spec":{"suspend":true}}')
    imm = api.kubectl(
        "patch",
        "job",
        "pi",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"x"}]',
        check=False,
    )
    assert imm.returncode != 0 and "field is immutable" in imm.stderr
    res = api.kubectl("api-resources", "--api-group=batch").stdout
    lines = {line.split()[0]: line.split() for line in res.splitlines()[1:]}
    assert lines["cronjobs"][1] == "cj" and lines["jobs"][-1] == "Job"
    assert "cronjob.batch/hello" in api.kubectl("get", "all").stdout
    api.kubectl("delete", "cronjob", "hello")
    api.kubectl("delete", "jobs", "--all")


def test_job_status_field_selector_and_watch_with_python_client(api):
    from kubernetes import client, watch

    batch = client.BatchV1Api(api.python_client())
    body = {
        "metadata": {"name": "py-job"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
    }
    created = batch.create_namespaced_job("default", body)
    assert created.spec.completion_mode == "NonIndexed" and created.spec.pod_replacement_policy == "TerminatingOrFailed"
    batch.patch_namespaced_job_status(
        "py-job", "default", {"status": {"succeeded": 1, "startTime": "2024-01-01T00:00:00Z"}}
    )
    hits = batch.list_namespaced_job("default", field_selector="status.successful=1").items
    assert [j.metadata.name for j in hits] == ["py-job"]
    assert batch.list_namespaced_job("default", field_selector="status.successful=0").items == []
    w = watch.Watch()
    events = []
    for ev in w.stream(batch.list_namespaced_job, "default", timeout_seconds=5, resource_version="0"):
        events.append((ev["type"], ev["object"].metadata.name))
        w.stop()
    assert events == [("ADDED", "py-job")]
    cj = batch.create_namespaced_cron_job(
        "default",
        {
            "metadata": {"name": "py-cj"},
            "spec": {"schedule": "@hourly", "timeZone": "Etc/UTC", "jobTemplate": {"spec": body["spec"]}},
        },
    )
    assert cj.spec.concurrency_policy == "Allow" and cj.spec.successful_jobs_history_limit == 3
    batch.delete_namespaced_cron_job("py-cj", "default")
    batch.delete_namespaced_job("py-job", "default")
