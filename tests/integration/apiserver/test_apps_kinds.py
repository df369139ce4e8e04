"""apps/v1 ReplicaSet and ControllerRevision against a real apiserver, with the real kubectl and the official Python
client: discovery, tables, /scale, /status, watch, patch and delete."""

import json

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]

RS = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
        },
    },
}


def header(out: str) -> list[str]:
    return out.splitlines()[0].split()


def test_replicaset_with_kubectl(api):
    res = api.kubectl("api-resources", "--api-group=apps").stdout
    lines = {line.split()[0]: line.split() for line in res.splitlines()[1:]}
    assert lines["replicasets"][1] == "rs" and lines["replicasets"][-1] == "ReplicaSet"
    assert lines["controllerrevisions"][-1] == "ControllerRevision"
    api.kubectl("create", "-f", "-", input=json.dumps(RS))
    out = api.kubectl("get", "rs").stdout
    assert header(out) == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert out.splitlines()[1].split()[:4] == ["web", "2", "0", "0"]
    wide = api.kubectl("get", "rs", "web", "-o", "wide").stdout
    assert header(wide) == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide.splitlines()[1].split()[-3:] == ["nginx", "nginx:1.27", "app=web"]
    api.kubectl("scale", "rs", "web", "--replicas=5")
    got = json.loads(api.kubectl("get", "rs", "web", "-o", "json").stdout)
    assert got["spec"]["replicas"] == 5 and got["metadata"]["generation"] == 2
    assert got["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert "replicaset.apps/web" in api.kubectl("get", "all").stdout
    bad = api.kubectl("scale", "rs", "web", "--replicas=-1", check=False)
    assert bad.returncode != 0
    api.kubectl("delete", "rs", "web")
    assert "NotFound" in api.kubectl("get", "rs", "web", check=False).stderr


def test_replicaset_scale_status_and_watch_with_python_client(api):
    from kubernetes import client, watch

    apps = client.AppsV1Api(api.python_client())
    body = json.loads(json.dumps(RS))
    body["metadata"]["name"] = "py"
    apps.create_namespaced_replica_set("default", body)
    scale = apps.read_namespaced_replica_set_scale("py", "default")
    assert scale.spec.replicas == 2 and scale.status.selector == "app=web"
    apps.patch_namespaced_replica_set_scale("py", "default", {"spec": {"replicas": 4}})
    assert apps.read_namespaced_replica_set("py", "default").spec.replicas == 4
    apps.patch_namespaced_replica_set_status("py", "default", {"status": {"replicas": 4, "readyReplicas": 3}})
    rs = apps.read_namespaced_replica_set("py", "default")
    assert rs.status.ready_replicas == 3 and rs.spec.replicas == 4
    listed = apps.list_namespaced_replica_set("default", field_selector="status.replicas=4")
    assert [i.metadata.name for i in listed.items] == ["py"]
    assert apps.list_namespaced_replica_set("default", field_selector="status.replicas=1").items == []
    w = watch.Watch()
    seen = []
    for ev in w.stream(apps.list_namespaced_replica_set, "default", timeout_seconds=5, resource_version="0"):
        seen.append((ev["type"], ev["object"].metadata.name))
        if seen:
            w.stop()
    assert seen == [("ADDED", "py")]
    apps.delete_namespaced_replica_set("py", "default")


def test_controllerrevision_table(api):
    cr = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": "ds1-5d8f",
            "namespace": "default",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds1", "uid": "u1", "controller": True}
            ],
        },
        "data": {"spec": {"template": {"$patch": "replace"}}},
        "revision": 1,
    }
    api.kubectl("create", "-f", "-", input=json.dumps(cr))
    out = api.kubectl("get", "controllerrevisions").stdout
    assert header(out) == ["NAME", "CONTROLLER", "REVISION", "AGE"]
    assert out.splitlines()[1].split()[:3] == ["ds1-5d8f", "daemonset.apps/ds1", "1"]
    from kubernetes import client

    apps = client.AppsV1Api(api.python_client())
    got = apps.read_namespaced_controller_revision("ds1-5d8f", "default")
    assert got.revision == 1 and got.data == cr["data"]


def test_kubectl_apply_replicaset_keeps_both_containers(api):
    body = json.loads(json.dumps(RS))
    body["metadata"]["name"] = "applied"
    containers = body["spec"]["template"]["spec"]["containers"]
    containers.append({"name": "side", "image": "busybox:1.36"})
    api.kubectl("apply", "-f", "-", input=json.dumps(body))
    containers[1]["image"] = "busybox:1.37"
    api.kubectl("apply", "-f", "-", input=json.dumps(body))
    got = json.loads(api.kubectl("get", "rs", "applied", "-o", "json").stdout)
    images = [c["image"] for c in got["spec"]["template"]["spec"]["containers"]]
    assert images == ["nginx:1.27", "busybox:1.37"]
    assert not any(k.startswith("$") for k in got["spec"]["template"]["spec"])
