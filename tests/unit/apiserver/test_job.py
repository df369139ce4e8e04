"""Job and CronJob strategies (batch/v1): kube 1.33's defaults, the generated selector, validation messages, tables."""

from tests.unit.apiserver.kinds_helpers import CTX, invalid, store_of, template

from pykubeadm.apiserver.registry.job import job_status


def job(name="pi", **spec):
    return {"metadata": {"name": name}, "spec": {"template": template({}, restartPolicy="Never"), **spec}}


async def test_job_defaults_and_generated_selector():
    st = store_of("jobs", "batch")
    obj = await st.create("ns", job(), CTX)
    spec, uid = obj["spec"], obj["metadata"]["uid"]
    assert {k: spec[k] for k in ("completions", "parallelism", "backoffLimit", "completionMode", "suspend")} == {
        "completions": 1,
        "parallelism": 1,
        "backoffLimit": 6,
        "completionMode": "NonIndexed",
        "suspend": False,
    }
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed" and spec["manualSelector"] is False
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": uid,
        "job-name": "pi",
    }
    assert obj["status"] == {} and obj["metadata"]["generation"] == 1
    only_parallel = await st.create("ns", job("p", parallelism=3), CTX)
    assert "completions" not in only_parallel["spec"] and only_parallel["spec"]["parallelism"] == 3
    failed_policy = await st.create("ns", job("f", podFailurePolicy={"rules": []}), CTX)
    assert failed_policy["spec"]["podReplacementPolicy"] == "Failed"


async def test_job_generate_name_labels_carry_the_final_name():
    st = store_of("jobs", "batch")
    obj = await st.create("ns", {"metadata": {"generateName": "run-"}, "spec": job()["spec"]}, CTX)
    name = obj["metadata"]["name"]
    assert name.startswith("run-") and obj["spec"]["template"]["metadata"]["labels"]["job-name"] == name


async def test_job_validation_and_immutable_template():
    st = store_of("jobs", "batch")
    e = await invalid(st.create("ns", {"metadata": {"name": "a"}, "spec": {"template": template({})}}, CTX))
    assert e.message == (
        'Job.batch "a" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always": '
        'supported values: "OnFailure", "Never"'
    )
    e = await invalid(st.create("ns", job(backoffLimit=-1), CTX))
    assert "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0" in e.message
    e = await invalid(st.create("ns", job(completionMode="Indexed", completions=None, parallelism=2), CTX))
    assert "spec.completions: Required value: when completion mode is Indexed" in e.message
    e = await invalid(st.create("ns", job(selector={"matchLabels": {"x": "y"}}), CTX))
    assert "`selector` not auto-generated" in e.message
    manual = job("m", manualSelector=True, selector={"matchLabels": {"app": "m"}})
    manual["spec"]["template"]["metadata"]["labels"] = {"app": "m"}
    obj = await st.create("ns", manual, CTX)
    assert obj["spec"]["selector"] == {"matchLabels": {"app": "m"}}
    assert obj["spec"]["template"]["metadata"]["labels"] == {"app": "m"}
    await st.create("ns", job(), CTX)

    def change_image(old):
        old["spec"]["template"]["spec"]["containers"][0]["image"] = "other"
        return old

    e = await invalid(st.update("ns", "pi", change_image, CTX))
    assert "spec.template: Invalid value" in e.message and "field is immutable" in e.message
    new, _ = await st.update("ns", "pi", lambda old: {**old, "spec": {**old["spec"], "suspend": True}}, CTX)
    assert new["spec"]["suspend"] is True and new["metadata"]["generation"] == 2


async def test_job_table_status_and_field_label():
    st = store_of("jobs", "batch")
    obj = await st.create("ns", job(), CTX)
    cols = [c["name"] for c in st.strategy.table_columns()]
    assert cols == ["Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"]
    assert st.strategy.table_row(obj)[:4] == ["pi", "Running", "0/1", ""]
    done = {
        **obj,
        "status": {
            "succeeded": 1,
            "startTime": "2024-01-01T00:00:00Z",
            "completionTime": "2024-01-01T00:00:07Z",
            "conditions": [{"type": "Complete", "status": "True"}],
        },
    }
    assert st.strategy.table_row(done)[1:4] == ["Complete", "1/1", "7s"]
    assert st.strategy.get_attrs(done)["status.successful"] == "1"
    assert st.strategy.get_attrs(obj)["status.successful"] == "0"
    suspended = {**obj, "status": {"conditions": [{"type": "Suspended", "status": "True"}]}}
    assert job_status(suspended) == "Suspended"
    par = {**obj, "spec": {"parallelism": 3}}
    assert st.strategy.table_row(par)[2] == "0/1 of 3"


def cronjob(name="hello", **spec):
    return {
        "metadata": {"name": name},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": template({}, restartPolicy="OnFailure")}},
            **spec,
        },
    }


async def test_cronjob_defaults_validation_and_table():
    st = store_of("cronjobs", "batch")
    obj = await st.create("ns", cronjob(), CTX)
    spec = obj["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"]) == ("Allow", False)
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    assert "backoffLimit" not in spec["jobTemplate"]["spec"]  # Job defaults apply to Jobs, not to the template
    assert spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    assert st.strategy.short_names == ("cj",)
    cols = [c["name"] for c in st.strategy.table_columns()]
    assert cols[:7] == ["Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age"]
    assert st.strategy.table_row(obj)[:6] == ["hello", "*/5 * * * *", "<none>", "False", 0, "<none>"]
    await st.create("ns", cronjob("daily", schedule="@daily", timeZone="Europe/Paris"), CTX)
    e = await invalid(st.create("ns", cronjob("bad", schedule="not a cron"), CTX))
    assert e.message.startswith('CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "not a cron": ')
    e = await invalid(st.create("ns", cronjob("tz", schedule="TZ=UTC 0 * * * *"), CTX))
    assert "cannot use TZ or CRON_TZ in schedule, use timeZone field instead" in e.message
    e = await invalid(st.create("ns", cronjob("zone", timeZone="Mars/Olympus"), CTX))
    assert 'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus' in e.message
    e = await invalid(st.create("ns", cronjob("cp", concurrencyPolicy="Sometimes"), CTX))
    assert (
        'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"'
        in e.message
    )
    e = await invalid(st.create("ns", cronjob("x" * 53), CTX))
    assert "must be no more than 52 characters" in e.message
    e = await invalid(
        st.create("ns", {"metadata": {"name": "n"}, "spec": {"jobTemplate": cronjob()["spec"]["jobTemplate"]}}, CTX)
    )
    assert "spec.schedule: Required value" in e.message


async def test_suspended_job_that_never_started_may_change_scheduling_directives():
    st = store_of("jobs", "batch")
    await st.create("ns", job("s", suspend=True), CTX)

    def schedule(old):
        old["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}
        old["spec"]["template"]["metadata"]["annotations"] = {"a": "b"}
        return old

    new, _ = await st.update("ns", "s", schedule, CTX)
    assert new["spec"]["template"]["spec"]["nodeSelector"] == {"disk": "ssd"}
    await st.update("ns", "s", lambda old: {**old, "status": {"startTime": "2024-01-01T00:00:00Z"}}, CTX, "status")

    def again(old):
        old["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "hdd"}
        return old

    e = await invalid(st.update("ns", "s", again, CTX))
    assert "spec.template: Invalid value" in e.message
