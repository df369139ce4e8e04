"""Auditing with a real apiserver and the real kubectl: an audit Policy that logs Secrets at Metadata and ConfigMaps at
RequestResponse gives exactly those events, at the right levels and stages, with no Secret data anywhere, and the
Audit-Id header kubectl received names its event."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from pykubeadm.testing.apiserver import ApiServer, running_apiserver

pytestmark = pytest.mark.integration

SECRET_VALUE = "pa55-w0rd-never-logged"
POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets"]
  omitStages: ["RequestReceived"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["configmaps"]
"""


def _events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _wait_events(log: Path, pred, what: str, timeout: float = 20.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists():
            found = [e for e in _events(log) if pred(e)]
            if found:
                return found
        time.sleep(0.1)
    raise AssertionError(f"no audit event: {what}")


def test_policy_levels_stages_audit_id_and_no_secret_data(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    log = tmp_path / "audit" / "audit.log"
    flags = [f"--audit-policy-file={policy}", f"--audit-log-path={log}", "--audit-log-maxsize=100"]
    with running_apiserver(tmp_path / "api", extra_flags=flags, audit_log=False) as api:
        api.kubectl("create", "secret", "generic", "s1", f"--from-literal=password={SECRET_VALUE}")
        api.kubectl("create", "configmap", "c1", "--from-literal=k=v1")
        api.kubectl("create", "namespace", "unaudited")
        got = api.kubectl("-v=8", "get", "secret", "s1", "-o", "name")
        ids = re.findall(r"Audit-Id:\s*([0-9a-f-]{36})", got.stderr, re.IGNORECASE)
        assert ids, got.stderr[-2000:]
        api.kubectl("get", "configmap", "c1", "-o", "json")
        api.kubectl("get", "configmaps", "--as=bob", "--as-group=devs", check=False)
        alice = api.kubeconfig_for("alice")
        denied = api.kubectl("get", "configmaps", kubeconfig=alice, check=False)
        assert denied.returncode != 0 and "forbidden" in denied.stderr.lower()

        # A watch is long-running: its ResponseStarted stage comes when the headers are sent.
        watch = subprocess.Popen(
            ["kubectl", "get", "configmaps", "--watch", "--request-timeout=3s"],
            env=api.kubectl_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            started = _wait_events(
                log, lambda e: e["verb"] == "watch" and e["stage"] == "ResponseStarted", "watch ResponseStarted"
            )
        finally:
            watch.kill()
            watch.wait()
        assert started[0]["level"] == "RequestResponse" and started[0]["responseStatus"]["code"] == 200

        kubectl_get = _wait_events(log, lambda e: e["auditID"] == ids[-1], "the kubectl request's Audit-Id")
        assert [e["stage"] for e in kubectl_get] == ["ResponseComplete"]
        ev = kubectl_get[0]
        assert ev["kind"] == "Event" and ev["apiVersion"] == "audit.k8s.io/v1" and ev["level"] == "Metadata"
        assert ev["verb"] == "get" and ev["requestURI"].startswith("/api/v1/namespaces/default/secrets/s1")
        assert ev["objectRef"] == {"resource": "secrets", "namespace": "default", "name": "s1", "apiVersion": "v1"}
        assert ev["user"]["username"] == "kubernetes-admin" and "system:masters" in ev["user"]["groups"]
        assert ev["sourceIPs"] == ["127.0.0.1"] and ev["userAgent"].startswith("kubectl")
        assert ev["responseStatus"] == {"metadata": {}, "code": 200}
        assert ev["annotations"]["authorization.k8s.io/decision"] == "allow"
        assert ev["requestReceivedTimestamp"] <= ev["stageTimestamp"]
        assert "requestObject" not in ev and "responseObject" not in ev

    events = _events(log)
    assert {e["objectRef"]["resource"] for e in events} == {"secrets", "configmaps"}
    secrets = [e for e in events if e["objectRef"]["resource"] == "secrets"]
    assert {e["level"] for e in secrets} == {"Metadata"} and {e["stage"] for e in secrets} == {"ResponseComplete"}
    created = [e for e in secrets if e["verb"] == "create"]
    assert created and created[0]["objectRef"]["name"] == "s1" and created[0]["responseStatus"]["code"] == 201
    text = log.read_text()
    assert SECRET_VALUE not in text and base64.b64encode(SECRET_VALUE.encode()).decode() not in text

    cms = [e for e in events if e["objectRef"]["resource"] == "configmaps"]
    assert {e["level"] for e in cms} == {"RequestResponse"}
    create = [e for e in cms if e["verb"] == "create"]
    assert [e["stage"] for e in create] == ["RequestReceived", "ResponseComplete"]
    assert create[0]["auditID"] == create[1]["auditID"]
    assert create[1]["requestObject"]["data"] == {"k": "v1"}
    assert create[1]["responseObject"]["metadata"]["name"] == "c1"
    assert "managedFields" not in create[1]["responseObject"]["metadata"]
    get = [e for e in cms if e["verb"] == "get" and e["stage"] == "ResponseComplete"]
    assert get and get[0]["responseObject"]["data"] == {"k": "v1"} and "requestObject" not in get[0]
    impersonated = [e for e in cms if e.get("impersonatedUser") and e["stage"] == "ResponseComplete"]
    assert impersonated and impersonated[0]["user"]["username"] == "kubernetes-admin"
    assert impersonated[0]["impersonatedUser"]["username"] == "bob"
    assert "devs" in impersonated[0]["impersonatedUser"]["groups"]
    forbidden = [e for e in cms if e["user"].get("username") == "alice" and e["stage"] == "ResponseComplete"]
    assert forbidden and forbidden[0]["responseStatus"]["code"] == 403
    assert forbidden[0]["responseStatus"]["reason"] == "Forbidden"
    assert forbidden[0]["annotations"]["authorization.k8s.io/decision"] == "forbid"


def test_audit_webhook_and_bad_policy_are_start_up_errors(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n")
    for flag, needle in (
        (f"--audit-webhook-config-file={tmp_path}/hook.yaml", "--audit-webhook-config-file"),
        (f"--audit-policy-file={policy}", "rules[0].level"),
    ):
        api = ApiServer(tmp_path / "api", extra_flags=[flag], audit_log=False)
        res = subprocess.run(api.command(), capture_output=True, text=True, timeout=60, check=False)
        assert res.returncode != 0 and needle in res.stderr, res.stderr
