"""Server-side apply and managedFields through the real kubectl and the official Python client: Update entries for
every write (manager from ?fieldManager= or the user agent), the exact fieldsV1 encoding, conflicts between two
appliers with kube's message, --force-conflicts, and a smaller configuration removing only its manager's fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pykubeadm.testing.apiserver import ApiServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]

FULL = """apiVersion: apps/v1
kind: Deployment
metadata: {name: ssa, namespace: default, labels: {team: a}}
spec:
  replicas: 2
  selector: {matchLabels: {app: ssa}}
  template:
    metadata: {labels: {app: ssa}}
    spec:
      containers:
      - {name: c, image: "nginx:1"}
      - {name: side, image: busybox}
"""
SMALLER = """apiVersion: apps/v1
kind: Deployment
metadata: {name: ssa, namespace: default, labels: {team: a}}
spec:
  selector: {matchLabels: {app: ssa}}
  template:
    metadata: {labels: {app: ssa}}
    spec:
      containers:
      - {name: c, image: "nginx:1"}
"""
SCALER = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ssa, namespace: default}\nspec: {replicas: 5}\n"


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _managed(api: ApiServer, *target: str) -> dict[str, dict[str, Any]]:
    obj = json.loads(api.kubectl("get", *target, "-o", "json", "--show-managed-fields").stdout)
    return {e["manager"]: e for e in obj["metadata"].get("managedFields", [])}


def test_create_records_an_update_entry(api: ApiServer) -> None:
    api.kubectl("create", "deployment", "made", "--image=nginx")
    entry = _managed(api, "deployment", "made")["kubectl-create"]
    assert entry["operation"] == "Update" and entry["apiVersion"] == "apps/v1" and entry["fieldsType"] == "FieldsV1"
    assert entry["time"].endswith("Z")
    fields = entry["fieldsV1"]
    assert fields["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}
    container = fields["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"nginx"}']
    assert container["."] == {} and container["f:image"] == {} and container["f:imagePullPolicy"] == {}
    assert fields["f:spec"]["f:selector"] == {}  # LabelSelector is an atomic map
    assert "f:status" not in fields


def test_two_managers_conflict_force_and_removal(api: ApiServer, tmp_path: Path) -> None:
    full, smaller, scaler = (
        _write(tmp_path, n, t) for n, t in (("a.yaml", FULL), ("s.yaml", SMALLER), ("b.yaml", SCALER))
    )
    api.kubectl("apply", "--server-side", "-f", full)
    res = api.kubectl("apply", "--server-side", "--field-manager=scaler", "-f", scaler, check=False)
    assert res.returncode != 0
    assert 'error: Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in res.stderr
    api.kubectl("apply", "--server-side", "--field-manager=scaler", "--force-conflicts", "-f", scaler)
    dep = json.loads(api.kubectl("get", "deployment", "ssa", "-o", "json").stdout)
    assert dep["spec"]["replicas"] == 5
    managed = _managed(api, "deployment", "ssa")
    assert managed["scaler"]["operation"] == "Apply" and managed["scaler"]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in managed["kubectl"]["fieldsV1"]["f:spec"]
    shown = api.kubectl("get", "deployment", "ssa", "-o", "yaml", "--show-managed-fields").stdout
    assert "manager: kubectl\n" in shown and "manager: scaler\n" in shown and "operation: Apply" in shown
    res = api.kubectl("apply", "--server-side", "-f", full, check=False)
    assert 'Apply failed with 1 conflict: conflict with "scaler": .spec.replicas' in res.stderr
    # Another writer's label survives; the applier's smaller configuration drops what only it owned.
    api.kubectl("label", "deployment", "ssa", "extra=1")
    api.kubectl("apply", "--server-side", "-f", smaller)
    dep = json.loads(api.kubectl("get", "deployment", "ssa", "-o", "json").stdout)
    assert [c["name"] for c in dep["spec"]["template"]["spec"]["containers"]] == ["c"]
    assert dep["spec"]["replicas"] == 5  # still the scaler's
    assert dep["metadata"]["labels"] == {"team": "a", "extra": "1"}
    managed = _managed(api, "deployment", "ssa")
    assert managed["kubectl-label"]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:extra": {}}}}


def test_conflict_with_an_update_manager_names_its_api_version(api: ApiServer, tmp_path: Path) -> None:
    api.kubectl("create", "configmap", "owned", "--from-literal=k=v1")
    cfg = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owned, namespace: default}\ndata: {k: v2}\n"
    res = api.kubectl("apply", "--server-side", "-f", _write(tmp_path, "cm.yaml", cfg), check=False)
    assert 'Apply failed with 1 conflict: conflict with "kubectl-create" using v1: .data.k' in res.stderr


def test_python_client_apply_and_user_agent_manager(api: ApiServer) -> None:
    from kubernetes import client

    with api.python_client() as api_client:
        core = client.CoreV1Api(api_client)
        svc = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "ssa-svc", "namespace": "default", "finalizers": ["example.com/keep"]},
            "spec": {"ports": [{"port": 80, "protocol": "TCP"}], "selector": {"app": "x"}},
        }
        applied = core.patch_namespaced_service(
            "ssa-svc", "default", svc, field_manager="py", _content_type="application/apply-patch+yaml"
        )
        entry = {e.manager: e for e in applied.metadata.managed_fields}["py"]
        assert entry.operation == "Apply"
        assert entry.fields_v1 == {
            "f:metadata": {"f:finalizers": {'v:"example.com/keep"': {}}},
            "f:spec": {
                "f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}, "f:protocol": {}}},
                "f:selector": {},
            },
        }
        body = {"metadata": {"name": "ua"}, "data": {"a": "b"}}
        made = core.create_namespaced_config_map("default", body)
        managers = {e.manager: e.operation for e in made.metadata.managed_fields}
        assert managers == {"OpenAPI-Generator": "Update"}
        core.patch_namespaced_service(
            "ssa-svc", "default", {"metadata": {"finalizers": None}}, _content_type="application/merge-patch+json"
        )


def test_client_side_apply_upgrades_to_server_side(api: ApiServer, tmp_path: Path) -> None:
    """An object managed with `kubectl apply` takes `kubectl apply --server-side` with changed values: the fields
    still as last applied are no conflict, and kubectl moves their ownership to its server-side manager."""
    csa = FULL.replace("name: ssa", "name: upgraded")
    api.kubectl("apply", "-f", _write(tmp_path, "csa.yaml", csa))
    changed = csa.replace("replicas: 2", "replicas: 3").replace('"nginx:1"', '"nginx:2"')
    res = api.kubectl("apply", "--server-side", "-f", _write(tmp_path, "ssa.yaml", changed))
    assert "serverside-applied" in res.stdout and "Warning" not in res.stderr
    dep = json.loads(api.kubectl("get", "deployment", "upgraded", "-o", "json").stdout)
    assert dep["spec"]["replicas"] == 3 and dep["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert dep["spec"]["template"]["metadata"]["labels"] == {"app": "ssa"}
    managed = _managed(api, "deployment", "upgraded")
    assert managed["kubectl"]["operation"] == "Apply" and "kubectl-client-side-apply" not in managed
