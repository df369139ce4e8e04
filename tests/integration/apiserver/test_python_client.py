"""The official `kubernetes` Python client: CRUD, list, patch, replace, watch and ApiException codes."""

import threading
import time

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def clients(api):
    c = api.python_client()
    yield client.CoreV1Api(c), client.AppsV1Api(c), client.CoordinationV1Api(c), c
    c.close()


def status_of(fn):
    with pytest.raises(ApiException) as e:
        fn()
    return e.value.status, e.value


def test_namespace_configmap_crud_and_errors(clients):
    v1, _, _, _ = clients
    v1.create_namespace({"metadata": {"name": "py"}})
    cm = v1.create_namespaced_config_map("py", {"metadata": {"name": "a", "labels": {"app": "x"}}, "data": {"k": "v"}})
    assert cm.metadata.uid and cm.metadata.resource_version and cm.metadata.creation_timestamp
    assert [i.metadata.name for i in v1.list_namespaced_config_map("py", label_selector="app=x").items] == ["a"]
    assert v1.list_namespaced_config_map("py", label_selector="app=y").items == []
    assert [i.metadata.name for i in v1.list_namespaced_config_map("py", field_selector="metadata.name=a").items] == [
        "a"
    ]
    code, e = status_of(lambda: v1.read_namespaced_config_map("nope", "py"))
    assert code == 404 and '"reason":"NotFound"' in e.body
    assert status_of(lambda: v1.create_namespaced_config_map("py", {"metadata": {"name": "a"}}))[0] == 409
    code, e = status_of(lambda: v1.create_namespaced_config_map("py", {"metadata": {"name": "Bad_Name"}}))
    assert code == 422 and '"reason":"Invalid"' in e.body
    cm.data["k"] = "v2"
    replaced = v1.replace_namespaced_config_map("a", "py", cm)
    assert replaced.data == {"k": "v2"}
    code, e = status_of(lambda: v1.replace_namespaced_config_map("a", "py", cm))  # stale resourceVersion
    assert code == 409 and "the object has been modified" in e.body
    assert v1.patch_namespaced_config_map("a", "py", {"data": {"x": "y"}}).data == {"k": "v2", "x": "y"}
    patched = v1.patch_namespaced_config_map("a", "py", [{"op": "remove", "path": "/data/k"}])
    assert patched.data == {"x": "y"}
    v1.delete_namespaced_config_map("a", "py")
    assert status_of(lambda: v1.read_namespaced_config_map("a", "py"))[0] == 404


def test_list_pagination_and_items_always_present(clients):
    v1, _, _, _ = clients
    v1.create_namespace({"metadata": {"name": "pages"}})
    assert v1.list_namespaced_secret("pages").items == []
    for i in range(5):
        v1.create_namespaced_secret("pages", {"metadata": {"name": f"s{i}"}, "string_data": {"k": str(i)}})
    first = v1.list_namespaced_secret("pages", limit=2)
    assert len(first.items) == 2 and first.metadata._continue
    names = [s.metadata.name for s in first.items]
    token = first.metadata._continue
    while token:
        page = v1.list_namespaced_secret("pages", limit=2, _continue=token)
        names += [s.metadata.name for s in page.items]
        token = page.metadata._continue
    assert names == [f"s{i}" for i in range(5)]
    assert v1.read_namespaced_secret("s1", "pages").data == {"k": "MQ=="}


def test_watch_stream_sees_changes_in_order(clients):
    v1, _, _, _ = clients
    v1.create_namespace({"metadata": {"name": "wpy"}})
    rv = v1.list_namespaced_config_map("wpy").metadata.resource_version
    seen = []

    def produce():
        time.sleep(0.5)
        v1.create_namespaced_config_map("wpy", {"metadata": {"name": "w"}})
        v1.patch_namespaced_config_map("w", "wpy", {"metadata": {"labels": {"a": "b"}}})
        v1.delete_namespaced_config_map("w", "wpy")

    t = threading.Thread(target=produce)
    t.start()
    w = watch.Watch()
    for ev in w.stream(v1.list_namespaced_config_map, "wpy", resource_version=rv, timeout_seconds=5):
        seen.append((ev["type"], ev["object"].metadata.name))
        if len(seen) == 3:
            w.stop()
    t.join()
    assert seen == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_deployment_lease_node_status(clients):
    v1, apps, coord, _ = clients
    dep = apps.create_namespaced_deployment(
        "default",
        {
            "metadata": {"name": "pyd"},
            "spec": {
                "selector": {"matchLabels": {"a": "b"}},
                "template": {
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "x:1"}]},
                },
            },
        },
    )
    assert dep.spec.replicas == 1 and dep.metadata.generation == 1
    code, e = status_of(
        lambda: apps.create_namespaced_deployment(
            "default",
            {
                "metadata": {"name": "bad"},
                "spec": {
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {
                        "metadata": {"labels": {"a": "c"}},
                        "spec": {"containers": [{"name": "c", "image": "x"}]},
                    },
                },
            },
        )
    )
    assert code == 422 and "selector" in e.body
    st = apps.patch_namespaced_deployment_status("pyd", "default", {"status": {"readyReplicas": 1, "replicas": 1}})
    assert st.status.ready_replicas == 1 and st.metadata.generation == 1
    lease = coord.create_namespaced_lease(
        "kube-node-lease", {"metadata": {"name": "n9"}, "spec": {"holderIdentity": "n9", "leaseDurationSeconds": 40}}
    )
    lease.spec.renew_time = "2024-01-01T00:00:00.000000Z"
    renewed = coord.replace_namespaced_lease("n9", "kube-node-lease", lease)
    assert renewed.metadata.resource_version != lease.metadata.resource_version
    node = v1.create_node(
        {
            "metadata": {"name": "pyn"},
            "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "x", "message": "y"}]},
        }
    )
    assert node.status.conditions[0].status == "False"
    node = v1.patch_node_status("pyn", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert node.status.conditions[0].status == "True"
    node = v1.patch_node("pyn", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert node.status.conditions[0].status == "True"  # the main resource ignores status


def test_forbidden_for_unprivileged_user(api):
    c = api.python_client(api.kubeconfig_for("mallory"))
    try:
        code, e = status_of(lambda: client.CoreV1Api(c).list_namespaced_secret("kube-system"))
        assert code == 403
        assert 'User \\"mallory\\" cannot list resource \\"secrets\\"' in e.body
    finally:
        c.close()
