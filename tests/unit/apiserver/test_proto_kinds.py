"""Protobuf bodies of the workload kinds (kubectl 1.32/1.33 `create job|cronjob|pdb`, drain's Eviction) decode to
their JSON form; pointer bools and IntOrString keep their meaning."""

from pykubeadm.apiserver.proto import _CLASSES, MAGIC, decode_protobuf


def envelope(kind, api_version, msg):
    u = _CLASSES["Unknown"]()
    u.typeMeta.kind, u.typeMeta.apiVersion = kind, api_version
    u.raw = msg.SerializeToString()
    return MAGIC + u.SerializeToString()


def test_job_and_cronjob():
    j = _CLASSES["Job"]()
    j.metadata.name = "pi"
    j.spec.suspend = False  # a pointer bool: an explicit false stays
    j.spec.backoffLimit = 0  # a pointer int: an explicit 0 stays
    c = j.spec.template.spec.containers.add()
    c.name, c.image = "pi", "perl"
    j.spec.template.spec.restartPolicy = "Never"
    out = decode_protobuf(envelope("Job", "batch/v1", j))
    assert out["spec"]["suspend"] is False and out["spec"]["backoffLimit"] == 0
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "pi", "image": "perl"}]
    cj = _CLASSES["CronJob"]()
    cj.metadata.name = "hello"
    cj.spec.schedule, cj.spec.timeZone = "*/1 * * * *", "Etc/UTC"
    cj.spec.jobTemplate.metadata.name = "hello"
    out = decode_protobuf(envelope("CronJob", "batch/v1", cj))
    assert out["spec"]["schedule"] == "*/1 * * * *" and out["spec"]["timeZone"] == "Etc/UTC"
    assert out["spec"]["jobTemplate"]["metadata"] == {"name": "hello"}


def test_pdb_and_eviction():
    p = _CLASSES["PodDisruptionBudget"]()
    p.metadata.name = "db"
    p.spec.minAvailable.type, p.spec.minAvailable.strVal = 1, "50%"
    p.spec.selector.matchLabels["app"] = "db"
    out = decode_protobuf(envelope("PodDisruptionBudget", "policy/v1", p))
    assert out["spec"] == {"minAvailable": "50%", "selector": {"matchLabels": {"app": "db"}}}
    e = _CLASSES["Eviction"]()
    e.metadata.name, e.metadata.namespace = "web-0", "default"
    e.deleteOptions.gracePeriodSeconds = 0
    out = decode_protobuf(envelope("Eviction", "policy/v1", e))
    assert out["metadata"] == {"name": "web-0", "namespace": "default"}
    assert out["deleteOptions"]["gracePeriodSeconds"] == 0
