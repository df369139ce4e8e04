"""Wire details in-process: Go's JSON encoding (escapes, field order, final newline), output negotiation, API
Priority and Fairness classification, the APIService strategy (validation, table) and Local APIServices, and the
aggregator's discovery order. The same behaviour against a real process: tests/integration/apiserver/test_wire.py and
test_aggregator.py."""

from __future__ import annotations

import json

import pytest
from aiohttp.test_utils import TestClient, TestServer

from pykubeadm.apiserver.aggregator.apiservice import APIServiceStrategy, local_apiservice
from pykubeadm.apiserver.aggregator.discovery import extend_api_groups
from pykubeadm.apiserver.app import build_app
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.attributes import Decision
from pykubeadm.apiserver.discovery import api_groups, version_info
from pykubeadm.apiserver.flowcontrol import classify
from pykubeadm.apiserver.handlers.codec import encode_json
from pykubeadm.apiserver.registry.base import RequestContext
from pykubeadm.apiserver.state import ApiState
from pykubeadm.storage.memory import MemoryStore

ADMIN = UserInfo("admin", groups=("system:masters", "system:authenticated"))


def test_encode_json_like_go() -> None:
    obj = {
        "metadata": {"name": "a"},
        "data": {"x": "<b>&\u2028"},
        "status": {},
        "kind": "ConfigMap",
        "apiVersion": "v1",
    }
    assert encode_json(obj) == (
        b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},'
        b'"data":{"x":"\\u003cb\\u003e\\u0026\\u2028"},"status":{}}\n'
    )
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    assert encode_json(status) == json.dumps(status, separators=(",", ":")).encode() + b"\n"


def test_flow_schemas() -> None:
    assert classify(ADMIN, "/api/v1/pods") == ("exempt", "exempt")
    anon = UserInfo("system:anonymous", groups=("system:unauthenticated",))
    assert classify(anon, "/readyz") == ("probes", "exempt")
    node = UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated"))
    assert classify(node, "/api/v1/nodes/n1", "nodes") == ("system-node-high", "node-high")
    assert classify(node, "/api/v1/pods", "pods") == ("system-nodes", "system")
    sa = UserInfo("system:serviceaccount:default:x", groups=("system:serviceaccounts", "system:authenticated"))
    assert classify(sa, "/api/v1/pods", "pods") == ("service-accounts", "workload-low")
    assert classify(UserInfo("jane", groups=("system:authenticated",)), "/api") == ("global-default", "global-default")


def test_apiservice_validation_and_table() -> None:
    s = APIServiceStrategy()
    local = local_apiservice("apps", "v1")
    s.prepare_for_create(local, RequestContext())
    assert s.validate(local, RequestContext()) == []
    assert local["metadata"]["name"] == "v1.apps"
    assert local["status"]["conditions"][0]["reason"] == "Local"
    assert s.table_row(local)[:3] == ["v1.apps", "Local", "True"]
    assert local_apiservice("", "v1")["metadata"]["name"] == "v1."
    bad = {
        "metadata": {"name": "v1.other"},
        "spec": {"group": "g.example.com", "version": "v1", "service": {"namespace": "ns"}, "versionPriority": 1},
    }
    causes = {c.field: c.message for c in s.validate(bad, RequestContext())}
    assert causes["metadata.name"] == 'Invalid value: "v1.other": must be "v1.g.example.com"'
    assert causes["spec.service.name"] == "Required value"
    assert causes["spec.groupPriorityMinimum"] == "Required value"
    remote = {
        "metadata": {"name": "v1.g.example.com"},
        "spec": {"service": {"namespace": "ns", "name": "api"}},
        "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]},
    }
    assert s.table_row(remote)[1:3] == ["ns/api", "False (MissingEndpoints)"]


def test_discovery_groups_in_priority_order() -> None:
    names = [g["name"] for g in extend_api_groups(api_groups(), None)["groups"]]
    assert names[0] == "apiregistration.k8s.io" and names.index("apps") < names.index("rbac.authorization.k8s.io")


@pytest.fixture
async def http():
    async def admin(req):
        return ADMIN

    async def allow(attrs):
        return Decision.ALLOW, ""

    state = ApiState(backend=MemoryStore(), version_info=version_info("v1.33.2"), authenticator=admin, authorizer=allow)
    client = TestClient(TestServer(build_app(state)))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()


async def test_negotiation(http) -> None:
    r = await http.post("/api/v1/namespaces", json={"metadata": {"name": "n"}})
    assert r.status == 201 and (await r.read()).endswith(b"}\n")
    r = await http.get("/api/v1/namespaces/n", headers={"User-Agent": "curl/8.0"})
    assert (await r.read()).startswith(b'{\n  "kind": "Namespace"')
    r = await http.get("/api/v1/namespaces/n?pretty=false", headers={"User-Agent": "curl/8.0"})
    assert (await r.read()).startswith(b'{"kind":"Namespace"')
    r = await http.get("/api/v1/namespaces/n", headers={"Accept": "application/yaml"})
    assert r.headers["Content-Type"] == "application/yaml" and (await r.text()).startswith("apiVersion: v1\n")
    r = await http.get("/api/v1/namespaces?watch=1", headers={"Accept": "application/yaml"})
    assert r.status == 406
    assert (await r.json())["message"] == "only the following media types are accepted: application/json"
    r = await http.get("/api/v1/namespaces/n")
    assert r.headers["Audit-Id"] and r.headers["X-Kubernetes-Pf-Flowschema-Uid"]
