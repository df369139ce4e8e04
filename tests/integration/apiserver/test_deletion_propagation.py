"""Deletion propagation and namespace termination against a real apiserver, with kubectl and the Python client:
`--cascade=foreground|orphan` leave the object with its GC finalizer, it goes on the update that clears it; a deleted
namespace is Terminating, refuses new content, and disappears once `namespaces/finalize` empties spec.finalizers."""

import json
import time

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]

RS = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "x", "namespace": "default"},
    "spec": {
        "replicas": 0,
        "selector": {"matchLabels": {"app": "x"}},
        "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
    },
}


def rs(name: str) -> str:
    body = json.loads(json.dumps(RS))
    body["metadata"]["name"] = name
    return json.dumps(body)


def wait_gone(api, *args: str, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if api.kubectl("get", *args, check=False).returncode != 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"{args} still exists")


def test_cascade_foreground_and_orphan(api):
    for name in ("fg", "or", "bg"):
        api.kubectl("create", "-f", "-", input=rs(name))
    api.kubectl("delete", "rs", "fg", "--cascade=foreground", "--wait=false")
    fg = json.loads(api.kubectl("get", "rs", "fg", "-o", "json").stdout)
    assert fg["metadata"]["finalizers"] == ["foregroundDeletion"] and fg["metadata"]["deletionTimestamp"]
    api.kubectl("delete", "rs", "or", "--cascade=orphan", "--wait=false")
    orphaned = json.loads(api.kubectl("get", "rs", "or", "-o", "json").stdout)
    assert orphaned["metadata"]["finalizers"] == ["orphan"]
    api.kubectl("delete", "rs", "bg")  # background: gone at once (kubectl waits for it)
    assert api.kubectl("get", "rs", "bg", check=False).returncode != 0
    # what the garbage collector does when it is done: remove its finalizer; the object then goes
    api.kubectl("patch", "rs", "fg", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    api.kubectl("patch", "rs", "or", "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    wait_gone(api, "rs", "fg")
    wait_gone(api, "rs", "or")


def test_jobs_orphan_without_a_policy_python_client(api):
    from kubernetes import client

    batch = client.BatchV1Api(api.python_client())
    body = {
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
    }
    batch.create_namespaced_job("default", body)
    info = batch.delete_namespaced_job_with_http_info("j", "default")  # no propagationPolicy: batch/v1 orphans
    headers = getattr(info, "headers", None) or info[2]  # 37.x: ApiResponse; 31.x: (data, status, headers)
    assert "child pods are preserved by default when jobs are deleted" in headers["Warning"]
    job = batch.read_namespaced_job("j", "default")
    assert job.metadata.finalizers == ["orphan"] and job.metadata.deletion_timestamp is not None
    batch.patch_namespaced_job("j", "default", {"metadata": {"finalizers": None}})
    from kubernetes.client.rest import ApiException

    with pytest.raises(ApiException) as e:
        batch.read_namespaced_job("j", "default")
    assert e.value.status == 404


def test_namespace_terminating_then_finalized(api):
    from kubernetes import client

    core = client.CoreV1Api(api.python_client())
    api.kubectl("create", "ns", "doomed")
    api.kubectl("create", "configmap", "keep", "-n", "doomed", "--from-literal=a=b")
    api.kubectl("delete", "ns", "doomed", "--wait=false")
    out = api.kubectl("get", "ns", "doomed").stdout
    assert out.splitlines()[1].split()[:2] == ["doomed", "Terminating"]
    refused = api.kubectl("create", "configmap", "new", "-n", "doomed", "--from-literal=a=b", check=False)
    assert refused.returncode != 0
    assert (
        'configmaps "new" is forbidden: unable to create new content in namespace doomed because it is being '
        "terminated" in refused.stderr
    )
    ns = core.read_namespace("doomed")
    assert ns.spec.finalizers == ["kubernetes"] and ns.status.phase == "Terminating"
    ns.spec.finalizers = []
    core.replace_namespace_finalize("doomed", ns)
    wait_gone(api, "ns", "doomed")
