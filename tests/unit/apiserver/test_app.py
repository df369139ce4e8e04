"""The HTTP layer in-process (aiohttp test client over the in-memory store): discovery, tables, watch framing and
bookmarks, delete semantics, subresources."""

import asyncio
import json

import pytest
from aiohttp.test_utils import TestClient, TestServer

from pykubeadm.apiserver.app import build_app
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.attributes import Decision
from pykubeadm.apiserver.bootstrap import ensure_builtin_objects
from pykubeadm.apiserver.discovery import version_info
from pykubeadm.apiserver.handlers import watch as watch_mod
from pykubeadm.apiserver.state import ApiState
from pykubeadm.storage.memory import MemoryStore

ADMIN = UserInfo("admin", groups=("system:masters", "system:authenticated"))
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


async def _admin(req):
    return ADMIN


async def _allow(attrs):
    return Decision.ALLOW, ""


@pytest.fixture
async def http():
    events = []
    state = ApiState(
        backend=MemoryStore(), version_info=version_info("v1.33.2"), authenticator=_admin, authorizer=_allow
    )
    await ensure_builtin_objects(state, "127.0.0.1", 6443, "10.96.0.1")
    client = TestClient(TestServer(build_app(state, events.append)))
    await client.start_server()
    client.audit = events
    yield client
    await client.close()


async def test_discovery_documents(http):
    assert (await (await http.get("/version")).json())["gitVersion"] == "v1.33.2"
    r = await http.get("/api")
    assert r.content_type == "application/json" and (await r.json())["versions"] == ["v1"]
    groups = {g["name"] for g in (await (await http.get("/apis")).json())["groups"]}
    assert {
        "apps",
        "rbac.authorization.k8s.io",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "scheduling.k8s.io",
        "authorization.k8s.io",
        "authentication.k8s.io",
    } <= groups
    core = {r["name"]: r for r in (await (await http.get("/api/v1")).json())["resources"]}
    assert core["nodes"]["shortNames"] == ["no"] and core["nodes"]["namespaced"] is False
    assert core["pods/status"]["singularName"] == "" and core["services"]["categories"] == ["all"]
    apps = {r["name"] for r in (await (await http.get("/apis/apps/v1")).json())["resources"]}
    assert {"deployments", "deployments/scale", "daemonsets/status"} <= apps
    # kubectl <= 1.28 asks for the protobuf document (gnostic's openapi.v2.Document; see test_openapi_proto.py).
    r = await http.get("/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"})
    assert r.status == 200 and r.content_type == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    r = await http.get("/openapi/v2")
    assert r.status == 200 and "io.k8s.api.core.v1.Pod" in (await r.json())["definitions"]
    assert (await http.get("/apis/nope/v1")).status == 404


async def test_table_and_list_shapes(http):
    await http.post(
        "/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "a"}, "data": {"x": "1", "y": "2"}}
    )
    t = await (await http.get("/api/v1/namespaces/default/configmaps", headers={"Accept": TABLE})).json()
    assert t["kind"] == "Table" and [c["name"] for c in t["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert t["rows"][0]["cells"][:2] == ["a", 2]
    assert t["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    lst = await (await http.get("/api/v1/namespaces/default/secrets")).json()
    assert lst["kind"] == "SecretList" and lst["items"] == [] and lst["metadata"]["resourceVersion"]
    r = await http.get("/api/v1/namespaces/default/configmaps?includeObject=Bogus", headers={"Accept": TABLE})
    assert r.status == 400
    assert http.audit and http.audit[-1]["verb"] == "list"


async def test_watch_framing_synthetic_added_and_bookmarks(http, monkeypatch):
    monkeypatch.setattr(watch_mod, "BOOKMARK_INTERVAL", 0.2)
    await http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "w"}})
    r = await http.get(
        "/api/v1/namespaces/default/configmaps?watch=True&fieldSelector=metadata.name%3Dw"
        "&allowWatchBookmarks=true&timeoutSeconds=1"
    )
    body = (await r.read()).decode()
    lines = [json.loads(x) for x in body.splitlines()]
    assert lines[0]["type"] == "ADDED" and lines[0]["object"]["kind"] == "ConfigMap"
    assert any(e["type"] == "BOOKMARK" and e["object"]["metadata"]["resourceVersion"] for e in lines[1:])
    assert body.endswith("\n")


async def test_watch_from_resource_version_sends_only_changes(http):
    rv = (await (await http.get("/api/v1/namespaces/default/configmaps")).json())["metadata"]["resourceVersion"]

    async def change():
        await asyncio.sleep(0.2)
        await http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "n"}})
        await http.delete("/api/v1/namespaces/default/configmaps/n")

    task = asyncio.create_task(change())
    r = await http.get(f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=1")
    events = [json.loads(x)["type"] for x in (await r.read()).decode().splitlines()]
    await task
    assert events == ["ADDED", "DELETED"]


async def test_delete_status_finalizers_and_dry_run(http):
    ns = "/api/v1/namespaces/default/configmaps"
    await http.post(ns, json={"metadata": {"name": "d"}})
    r = await http.delete(f"{ns}/d", json={"propagationPolicy": "Background"})
    st = await r.json()
    assert r.status == 200 and st["kind"] == "Status" and st["status"] == "Success" and st["details"]["name"] == "d"
    await http.post(ns, json={"metadata": {"name": "f", "finalizers": ["example.com/x"]}})
    obj = await (await http.delete(f"{ns}/f")).json()
    assert obj["kind"] == "ConfigMap" and obj["metadata"]["deletionTimestamp"]
    r = await http.post(f"{ns}?dryRun=All", json={"metadata": {"name": "dry"}})
    assert r.status == 201 and (await http.get(f"{ns}/dry")).status == 404
    r = await http.delete("/api/v1/namespaces/default/configmaps/nope")
    assert r.status == 404 and (await r.json())["message"] == 'configmaps "nope" not found'


async def test_pod_binding_and_status(http):
    pods = "/api/v1/namespaces/default/pods"
    r = await http.post(pods, json={"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    pod = await r.json()
    assert pod["status"]["phase"] == "Pending" and pod["spec"]["schedulerName"] == "default-scheduler"
    r = await http.post(
        f"{pods}/p/binding",
        json={
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "p"},
            "target": {"kind": "Node", "name": "n1"},
        },
    )
    assert r.status == 201
    pod = await (await http.get(f"{pods}/p")).json()
    assert pod["spec"]["nodeName"] == "n1"
    assert any(c["type"] == "PodScheduled" for c in pod["status"]["conditions"])
    r = await http.post(f"{pods}/p/binding", json={"target": {"name": "n2"}})
    assert r.status == 409
    r = await http.patch(
        f"{pods}/p/status",
        data=json.dumps({"status": {"phase": "Running"}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert (await r.json())["status"]["phase"] == "Running"
    field = await (await http.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1")).json()
    assert [p["metadata"]["name"] for p in field["items"]] == ["p"]
    # A bound, running pod is deleted gracefully: marked first, removed by a grace-0 delete (the kubelet's).
    obj = await (await http.delete(f"{pods}/p")).json()
    assert obj["metadata"]["deletionTimestamp"] and obj["metadata"]["deletionGracePeriodSeconds"] == 30
    r = await http.delete(f"{pods}/p?gracePeriodSeconds=0")
    # kube's pod storage sets ReturnDeletedObject: the answer is the deleted Pod, not a Status.
    assert r.status == 200 and (await r.json())["kind"] == "Pod"


async def test_kubernetes_service_and_builtin_objects(http):
    svc = await (await http.get("/api/v1/namespaces/default/services/kubernetes")).json()
    assert svc["spec"]["clusterIP"] == "10.96.0.1" and svc["spec"]["ports"][0]["targetPort"] == 6443
    ep = await (await http.get("/api/v1/namespaces/default/endpoints/kubernetes")).json()
    assert ep["subsets"][0]["addresses"][0]["ip"] == "127.0.0.1"
    pcs = await (await http.get("/apis/scheduling.k8s.io/v1/priorityclasses")).json()
    assert {p["metadata"]["name"]: p["value"] for p in pcs["items"]} == {
        "system-cluster-critical": 2000000000,
        "system-node-critical": 2000001000,
    }


async def test_field_validation_strict_warn_ignore(http):
    cms = "/api/v1/namespaces/default/configmaps"
    body = {"metadata": {"name": "t", "lables": {"a": "b"}}, "daat": {"a": "1"}}
    r = await http.post(f"{cms}?fieldValidation=Strict", json=body)
    assert r.status == 400
    assert (await r.json())["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding '
        'error: unknown field "daat", unknown field "metadata.lables"'
    )
    r = await http.post(cms, json=body)
    assert r.status == 201 and r.headers.getall("Warning") == [
        '299 - "unknown field \\"daat\\""',
        '299 - "unknown field \\"metadata.lables\\""',
    ]
    stored = await (await http.get(f"{cms}/t")).json()
    assert "daat" not in stored and "lables" not in stored["metadata"]
    r = await http.post(f"{cms}?fieldValidation=Ignore", json={**body, "metadata": {"name": "u"}})
    assert r.status == 201 and "Warning" not in r.headers


async def test_aggregated_discovery_by_content_negotiation(http):
    accept = (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
    )
    r = await http.get("/apis", headers={"Accept": accept})
    assert r.headers["Content-Type"] == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    doc = await r.json(content_type=None)
    apps = next(g for g in doc["items"] if g["metadata"]["name"] == "apps")
    deploy = next(x for x in apps["versions"][0]["resources"] if x["resource"] == "deployments")
    assert deploy["scope"] == "Namespaced" and deploy["responseKind"] == {
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
    }
    assert {s["subresource"] for s in deploy["subresources"]} == {"status", "scale"}
    core = await (await http.get("/api", headers={"Accept": accept})).json(content_type=None)
    assert [g["metadata"]["name"] for g in core["items"]] == [""]
    legacy = await http.get("/api", headers={"Accept": "application/json, */*"})
    assert (
        legacy.headers["Content-Type"].startswith("application/json") and (await legacy.json())["kind"] == "APIVersions"
    )


async def test_list_at_exact_revision_and_watch_list(http):
    cms = "/api/v1/namespaces/default/configmaps"
    await http.post(cms, json={"metadata": {"name": "v"}, "data": {"n": "1"}})
    rv = (await (await http.get(f"{cms}/v")).json())["metadata"]["resourceVersion"]
    await http.patch(
        f"{cms}/v", data=json.dumps({"data": {"n": "2"}}), headers={"Content-Type": "application/merge-patch+json"}
    )
    old = await (await http.get(f"{cms}?resourceVersion={rv}&resourceVersionMatch=Exact")).json()
    assert [i["data"]["n"] for i in old["items"] if i["metadata"]["name"] == "v"] == ["1"]
    assert (await http.get(f"{cms}?resourceVersionMatch=Exact")).status == 400
    r = await http.get(
        f"{cms}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
        f"&resourceVersion={rv}&timeoutSeconds=1"
    )
    events = [json.loads(x) for x in (await r.read()).decode().splitlines()]
    assert events[0]["type"] == "ADDED" and events[0]["object"]["data"]["n"] == "2"
    end = next(e for e in events if e["type"] == "BOOKMARK")
    assert end["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_errors_never_echo_secret_material(http):
    body = b"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  password: hunter2-secret\n   bad: [\n"
    r = await http.post("/api/v1/namespaces/default/secrets", data=body, headers={"Content-Type": "application/yaml"})
    st = await r.json()
    assert r.status == 400 and st["message"].startswith("error converting YAML to JSON: yaml: line ")
    assert "hunter2" not in json.dumps(st)
    r = await http.post(
        "/api/v1/namespaces/default/secrets", json={"metadata": {"name": "s"}, "data": {"k": "hunter2!"}}
    )
    assert r.status == 422 and "hunter2" not in await r.text()
