"""Bad requests get Status objects with 4xx codes (never 500), over raw HTTPS with a client certificate."""

import json
import ssl
import time

import httpx
import pytest

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def http(api):
    p = api.pki
    ctx = ssl.create_default_context(cafile=str(p.ca_cert))
    ctx.load_cert_chain(str(p.admin_cert), str(p.admin_key))
    with httpx.Client(base_url=api.url, verify=ctx, timeout=10) as c:
        yield c


CM = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize(
    ("method", "path", "body", "ctype", "code", "reason"),
    [
        ("POST", CM, b'{"metadata": {"name": ', "application/json", 400, "BadRequest"),
        ("POST", CM, b"metadata: [name: x", "application/yaml", 400, "BadRequest"),
        ("POST", CM, b'["not", "an", "object"]', "application/json", 400, "BadRequest"),
        (
            "POST",
            CM,
            b'{"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "x"}}',
            "application/json",
            400,
            "BadRequest",
        ),
        ("POST", CM, b'{"kind": "ConfigMap", "apiVersion": "v1", "metadata": {}}', "application/json", 422, "Invalid"),
        ("POST", CM, b'{"metadata": {"name": "x", "namespace": "other"}}', "application/json", 400, "BadRequest"),
        ("POST", CM, b'{"metadata": {"name": "x"}, "data": {"bad key!": "v"}}', None, 422, "Invalid"),
        ("POST", CM, b"\x00\x01", "application/octet-stream", 415, "UnsupportedMediaType"),
        ("POST", CM, b"k8s\x00\x0a\xff\xff", "application/vnd.kubernetes.protobuf", 400, "BadRequest"),
        ("POST", CM, b'{"metadata": {"name": "x", "labels": {"bad label": "v"}}}', "application/json", 422, "Invalid"),
        (
            "POST",
            "/api/v1/namespaces/default/secrets",
            b'{"metadata": {"name": "s"}, "data": {"k": "%%%"}}',
            None,
            422,
            "Invalid",
        ),
        ("GET", CM + "?labelSelector=a%20in%20(", None, None, 400, "BadRequest"),
        ("GET", CM + "?fieldSelector=spec.foo%3D1", None, None, 400, "BadRequest"),
        ("GET", CM + "?limit=abc", None, None, 400, "BadRequest"),
        ("GET", "/api/v1/namespaces/default/widgets", None, None, 404, "NotFound"),
        ("GET", "/apis/nope.io/v1/things", None, None, 404, "NotFound"),
        ("PATCH", CM + "/missing", b"{}", "application/merge-patch+json", 404, "NotFound"),
        ("PATCH", "/api/v1/namespaces/default", b"{}", "text/plain", 415, "UnsupportedMediaType"),
        ("PATCH", "/api/v1/namespaces/default", b'{"op": "add"}', "application/json-patch+json", 400, "BadRequest"),
        (
            "PUT",
            "/api/v1/namespaces/default",
            b'{"metadata": {"name": "other"}}',
            "application/json",
            400,
            "BadRequest",
        ),
        ("DELETE", "/api/v1/namespaces/default/configmaps/x?dryRun=Maybe", None, None, 400, "BadRequest"),
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", b'{"spec": {}}', None, 422, "Invalid"),
    ],
)
def test_bad_requests_get_status_objects(http, method, path, body, ctype, code, reason):
    headers = {"Content-Type": ctype} if ctype else {}
    r = http.request(method, path, content=body, headers=headers)
    assert r.status_code == code, r.text
    st = r.json()
    assert (st["kind"], st["status"], st["code"], st["reason"]) == ("Status", "Failure", code, reason)


def test_oversize_body_is_rejected_not_crashing(http):
    big = json.dumps({"metadata": {"name": "big"}, "data": {"k": "x" * (4 * 1024 * 1024)}}).encode()
    r = http.post(CM, content=big, headers={"Content-Type": "application/json"})
    assert r.status_code in (400, 413, 422)
    assert r.json()["kind"] == "Status"
    assert http.get("/readyz").text == "ok"


def test_health_endpoints_and_unauthenticated_access(api, http):
    assert http.get("/healthz").text == "ok"
    verbose = http.get("/readyz?verbose").text
    assert verbose.startswith("[+]ping ok") and verbose.endswith("readyz check passed\n")
    assert http.get("/livez/ping").text == "ok"
    assert http.get("/livez/nope").status_code == 404
    assert "[+]etcd excluded: ok" in http.get("/livez?verbose&exclude=etcd").text
    with httpx.Client(
        base_url=api.url, verify=ssl.create_default_context(cafile=str(api.pki.ca_cert)), timeout=10
    ) as anon:
        assert anon.get("/healthz").text == "ok"
        assert anon.get("/version").json()["gitVersion"] == "v1.33.0"
        r = anon.get("/api/v1/namespaces/default/secrets")
        assert r.status_code == 403
        assert r.json()["message"] == (
            'secrets is forbidden: User "system:anonymous" cannot list resource "secrets" in '
            'API group "" in the namespace "default"'
        )
        r = anon.get("/api/v1/namespaces", headers={"Authorization": "Bearer not-a-token"})
        assert r.status_code == 401 and r.json()["reason"] == "Unauthorized"


def test_audit_log_has_one_line_per_request_without_secrets(api, http):
    http.post(
        "/api/v1/namespaces/default/secrets",
        json={"metadata": {"name": "audited"}, "stringData": {"password": "s3cr3t-value"}},
    )
    http.get("/api/v1/namespaces/default/secrets/audited")

    def audited() -> list[dict]:
        events = [json.loads(line) for line in api.audit_log.read_text().splitlines()]
        return [e for e in events if e.get("objectRef", {}).get("name") == "audited"]

    # The event of a request is written once its response has been sent: wait for it, with a deadline.
    deadline = time.monotonic() + 10
    while [e["verb"] for e in audited()][-1:] != ["get"]:
        assert time.monotonic() < deadline, f"audit events of 'audited': {[e['verb'] for e in audited()]}"
        time.sleep(0.05)
    mine = audited()
    assert mine[-1]["user"]["username"] == "kubernetes-admin" and mine[-1]["responseStatus"]["code"] == 200
    assert "s3cr3t" not in api.audit_log.read_text()
    assert "s3cr3t" not in api.log_path.read_text()
