"""Answers as kube-apiserver writes them, checked against a real apiserver process: every JSON body ends with `\\n`,
`?pretty=true` and `Accept: application/yaml`, 406 for protobuf-only Accepts, Audit-Id and API Priority and
Fairness headers, DELETE answers per kind, Status errors (validation causes, not found, forbidden, 413, 415), and
`kubernetes.utils.create_from_yaml` reporting two existing objects with the error text a real cluster gives.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from pykubeadm.testing.apiserver import ApiServer


def _req(
    api: ApiServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    ctx: ssl.SSLContext | None = None,
) -> tuple[int, bytes, dict[str, str]]:
    h = {"Accept": "application/json", **(headers or {})}
    if body is not None:
        h.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(api.url + path, data=body, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, context=ctx or api._ssl(), timeout=20) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def _status(code: int, reason: str, message: str, details: dict | None = None) -> bytes:
    """A Status body byte for byte as kube-apiserver encodes it (field order, Go's HTML escaping, final newline)."""
    st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message}
    st["reason"] = reason
    if details is not None:
        st["details"] = details
    st["code"] = code
    return json.dumps(st, separators=(",", ":")).encode() + b"\n"


def test_bodies_end_with_a_newline_and_pretty_and_yaml(api: ApiServer) -> None:
    code, body, headers = _req(api, "GET", "/api/v1/namespaces/default")
    assert code == 200 and body.endswith(b"}\n") and body.count(b"\n") == 1
    assert headers["Content-Type"] == "application/json"
    code, body, _ = _req(api, "GET", "/api/v1/namespaces/default?pretty=true")
    assert body.startswith(b'{\n  "kind": "Namespace",\n  "apiVersion": "v1",\n') and body.endswith(b"\n}")
    code, body, headers = _req(api, "GET", "/api/v1/namespaces/default", headers={"Accept": "application/yaml"})
    assert code == 200 and headers["Content-Type"] == "application/yaml"
    doc = yaml.safe_load(body)
    assert doc["kind"] == "Namespace" and body.startswith(b"apiVersion: v1\nkind: Namespace\nmetadata:\n")
    # Errors are negotiated too.
    code, body, headers = _req(api, "GET", "/api/v1/namespaces/nope", headers={"Accept": "application/yaml"})
    assert code == 404 and yaml.safe_load(body)["reason"] == "NotFound"
    # Discovery, lists and Tables end with the newline too.
    for path in ("/api", "/apis", "/api/v1", "/api/v1/namespaces"):
        assert _req(api, "GET", path)[1].endswith(b"\n"), path


def test_protobuf_only_accept_is_406_and_json_fallback_works(api: ApiServer) -> None:
    code, body, _ = _req(
        api, "GET", "/api/v1/namespaces/default", headers={"Accept": "application/vnd.kubernetes.protobuf"}
    )
    assert code == 406
    assert body == _status(406, "NotAcceptable", "only the following media types are accepted: "
                           "application/json, application/yaml")  # fmt: skip
    accept = "application/vnd.kubernetes.protobuf,application/json"
    code, body, headers = _req(api, "GET", "/api/v1/namespaces/default", headers={"Accept": accept})
    assert code == 200 and headers["Content-Type"] == "application/json"


def test_audit_and_priority_and_fairness_headers(api: ApiServer) -> None:
    _, _, h1 = _req(api, "GET", "/api/v1/namespaces/default")
    _, _, h2 = _req(api, "GET", "/api/v1/namespaces/default", headers={"Audit-ID": "my-id"})
    assert h1["Audit-Id"] != h2["Audit-Id"] and h2["Audit-Id"] == "my-id"
    assert h1["X-Kubernetes-Pf-Flowschema-Uid"] and h1["X-Kubernetes-Pf-Prioritylevel-Uid"]
    # A different flow schema for a node than for the admin (exempt).
    node_cert = api.client_cert("system:node:n1", ["system:nodes"])
    ctx = ssl.create_default_context(cafile=str(api.pki.ca_cert))
    ctx.load_cert_chain(str(node_cert[0]), str(node_cert[1]))
    _, _, h3 = _req(api, "GET", "/api/v1/nodes/n1", ctx=ctx)
    assert h3["X-Kubernetes-Pf-Flowschema-Uid"] != h1["X-Kubernetes-Pf-Flowschema-Uid"]
    # An unauthenticated request that fails authentication gets the Audit-Id only.
    bad = ssl.create_default_context(cafile=str(api.pki.ca_cert))
    code, _, h4 = _req(api, "GET", "/api/v1/namespaces", headers={"Authorization": "Bearer nope.nope"}, ctx=bad)
    assert code == 401 and "Audit-Id" in h4 and "X-Kubernetes-Pf-Flowschema-Uid" not in h4


def test_delete_answers_per_kind(api: ApiServer) -> None:
    ns = "/api/v1/namespaces/default"
    cm = json.dumps({"metadata": {"name": "del-cm"}, "data": {"a": "b"}}).encode()
    uid = json.loads(_req(api, "POST", f"{ns}/configmaps", cm)[1])["metadata"]["uid"]
    code, body, _ = _req(api, "DELETE", f"{ns}/configmaps/del-cm")
    assert code == 200
    want = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": "del-cm", "kind": "configmaps", "uid": uid}}  # fmt: skip
    assert body == json.dumps(want, separators=(",", ":")).encode() + b"\n"
    svc = json.dumps({"metadata": {"name": "del-svc"}, "spec": {"ports": [{"port": 80}]}}).encode()
    assert _req(api, "POST", f"{ns}/services", svc)[0] == 201
    code, body, _ = _req(api, "DELETE", f"{ns}/services/del-svc")
    assert code == 200 and json.loads(body)["kind"] == "Service"
    # Kept by a finalizer: the object with its deletionTimestamp; 202 only with orphanDependents=false.
    fin = json.dumps({"metadata": {"name": "fin", "finalizers": ["example.com/hold"]}}).encode()
    assert _req(api, "POST", f"{ns}/configmaps", fin)[0] == 201
    code, body, _ = _req(api, "DELETE", f"{ns}/configmaps/fin?orphanDependents=false")
    assert code == 202 and json.loads(body)["metadata"]["deletionTimestamp"]
    patch = json.dumps({"metadata": {"finalizers": None}}).encode()
    _req(api, "PATCH", f"{ns}/configmaps/fin", patch, {"Content-Type": "application/merge-patch+json"})
    # deletecollection answers the List of what it deleted.
    for n in ("c1", "c2"):
        body = json.dumps({"metadata": {"name": n, "labels": {"dc": "1"}}}).encode()
        _req(api, "POST", f"{ns}/configmaps", body)
    code, body, _ = _req(api, "DELETE", f"{ns}/configmaps?labelSelector=dc%3D1")
    doc = json.loads(body)
    assert code == 200 and doc["kind"] == "ConfigMapList"
    assert sorted(i["metadata"]["name"] for i in doc["items"]) == ["c1", "c2"]


def test_errors_as_kube_words_them(api: ApiServer) -> None:
    ns = "/api/v1/namespaces/default"
    pod = json.dumps({"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c"}]}}).encode()
    code, body, _ = _req(api, "POST", f"{ns}/pods", pod)
    msg = 'Pod "x" is invalid: spec.containers[0].image: Required value'
    cause = {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers[0].image"}
    assert (code, body) == (422, _status(422, "Invalid", msg, {"name": "x", "kind": "Pod", "causes": [cause]}))
    code, body, _ = _req(api, "GET", f"{ns}/pods/x")
    assert body == _status(404, "NotFound", 'pods "x" not found', {"name": "x", "kind": "pods"})
    code, body, _ = _req(api, "GET", "/apis/apps/v1/namespaces/default/deployments/x")
    assert body == _status(404, "NotFound", 'deployments.apps "x" not found',
                           {"name": "x", "group": "apps", "kind": "deployments"})  # fmt: skip
    code, body, _ = _req(api, "POST", f"{ns}/configmaps", b"x" * (3 * 1024 * 1024 + 10))
    assert (code, json.loads(body)["reason"]) == (413, "RequestEntityTooLarge")
    assert json.loads(body)["message"] == "Request entity too large: limit is 3145728"
    code, body, _ = _req(api, "POST", f"{ns}/configmaps", b"{}", {"Content-Type": "text/csv"})
    assert body == _status(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
                           "media types include: application/json, application/yaml, "
                           "application/vnd.kubernetes.protobuf")  # fmt: skip
    # Forbidden in RBAC's words.
    ctx = ssl.create_default_context(cafile=str(api.pki.ca_cert))
    cert = api.client_cert("jane", ["devs"])
    ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    code, body, _ = _req(api, "GET", "/apis/apps/v1/namespaces/default/deployments/x", ctx=ctx)
    assert code == 403
    assert json.loads(body)["message"] == (
        'deployments.apps "x" is forbidden: User "jane" cannot get resource "deployments" '
        'in API group "apps" in the namespace "default"'
    )
    # Conflicts.
    cm = json.dumps({"metadata": {"name": "cf"}}).encode()
    rv = json.loads(_req(api, "POST", f"{ns}/configmaps", cm)[1])["metadata"]["resourceVersion"]
    _req(api, "PUT", f"{ns}/configmaps/cf", json.dumps({"metadata": {"name": "cf", "labels": {"a": "1"}}}).encode())
    stale = json.dumps({"metadata": {"name": "cf", "resourceVersion": rv}}).encode()
    code, body, _ = _req(api, "PUT", f"{ns}/configmaps/cf", stale)
    assert body == _status(409, "Conflict", 'Operation cannot be fulfilled on configmaps "cf": the object has been '
                           "modified; please apply your changes to the latest version and try again",
                           {"name": "cf", "kind": "configmaps"})  # fmt: skip


def test_create_from_yaml_reports_existing_objects_like_a_cluster(api: ApiServer, tmp_path: Path) -> None:
    from kubernetes import utils

    manifest = tmp_path / "two.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: twin-a\n  namespace: default\n"
        "---\n"
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: twin-b\n  namespace: default\n"
    )
    client = api.python_client()
    utils.create_from_yaml(client, str(manifest))
    with pytest.raises(utils.FailToCreateError) as err:
        utils.create_from_yaml(client, str(manifest))
    a = _status(409, "AlreadyExists", 'configmaps "twin-a" already exists', {"name": "twin-a", "kind": "configmaps"})
    b = _status(409, "AlreadyExists", 'serviceaccounts "twin-b" already exists',
                {"name": "twin-b", "kind": "serviceaccounts"})  # fmt: skip
    assert str(err.value) == f"Error from server (Conflict): {a.decode()}Error from server (Conflict): {b.decode()}"
