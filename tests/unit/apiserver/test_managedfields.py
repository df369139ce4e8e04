"""managedFields and server-side apply on plain objects with the real v1.33 schemas: fieldsV1 encoding (`f:`, `k:`,
`v:`, `.`), Update records, Apply merges, conflicts with kube's message, force and removal of dropped fields."""

from __future__ import annotations

import copy

import pytest

from pykubeadm.apiserver.openapi import definitions as defs
from pykubeadm.apiserver.patching import fieldsets as fs
from pykubeadm.apiserver.patching.managedfields import FieldManager, apply_configuration, manager_from, record_update
from pykubeadm.apiserver.registry.configmap import ConfigMapStrategy
from pykubeadm.apiserver.registry.deployment import DeploymentStrategy
from pykubeadm.apiserver.status import ApiError

DEP = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d", "namespace": "ns", "labels": {"app": "d"}, "finalizers": ["x/y"]},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "d"}},
        "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]},
        },
    },
}
SCHEMA = defs.schema_for("apps", "v1", "Deployment") or {}


def test_field_set_encoding() -> None:
    got = fs.field_set(DEP, SCHEMA, defs.resolve)
    assert got["f:metadata"]["f:labels"] == {"f:app": {}}
    assert got["f:metadata"]["f:finalizers"] == {'v:"x/y"': {}}
    assert got["f:spec"]["f:selector"] == {}  # atomic
    container = got["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert container["."] == {} and container["f:image"] == {}
    assert container["f:ports"] == {
        'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}, "f:protocol": {}}
    }


def test_changed_set_marks_new_maps_and_items() -> None:
    created = fs.changed_set(None, DEP, SCHEMA, defs.resolve)
    assert created["f:metadata"]["f:labels"] == {".": {}, "f:app": {}}
    newer = copy.deepcopy(DEP)
    newer["spec"]["replicas"] = 3
    assert fs.changed_set(DEP, newer, SCHEMA, defs.resolve) == {"f:spec": {"f:replicas": {}}}


def test_set_operations_and_paths() -> None:
    a = {"f:spec": {"f:a": {}, "f:b": {}}}
    b = {"f:spec": {"f:b": {}}}
    assert fs.difference(a, b) == {"f:spec": {"f:a": {}}}
    assert fs.intersect(a, b) == b
    assert fs.union({"f:x": {}}, {"f:x": {"f:y": {}}}) == {"f:x": {".": {}, "f:y": {}}}
    path = ("f:spec", "f:containers", 'k:{"name":"c"}', "f:image")
    assert fs.format_path(path) == '.spec.containers[name="c"].image'
    assert fs.format_path(("f:finalizers", 'v:"a"')) == '.finalizers[="a"]'


def test_record_update_moves_ownership() -> None:
    s = ConfigMapStrategy()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}
    record_update(s, cm, None, FieldManager("creator", "v1"))
    changed = copy.deepcopy(cm)
    changed["data"]["a"] = "9"
    record_update(s, changed, cm, FieldManager("editor", "v1"))
    entries = {e["manager"]: e for e in changed["metadata"]["managedFields"]}
    assert entries["creator"]["fieldsV1"] == {"f:data": {".": {}, "f:b": {}}}
    assert entries["editor"]["fieldsV1"] == {"f:data": {"f:a": {}}} and entries["editor"]["operation"] == "Update"


def test_apply_conflict_force_and_removal() -> None:
    s = DeploymentStrategy()
    live = apply_configuration(s, None, DEP, FieldManager("a", "apps/v1"), force=False)
    assert [e["manager"] for e in live["metadata"]["managedFields"]] == ["a"]
    scale = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 5}}
    with pytest.raises(ApiError) as err:
        apply_configuration(s, live, scale, FieldManager("b", "apps/v1"), force=False)
    assert err.value.code == 409 and err.value.reason == "Conflict"
    assert err.value.message == 'Apply failed with 1 conflict: conflict with "a": .spec.replicas'
    assert err.value.causes[0].field == ".spec.replicas"
    forced = apply_configuration(s, live, scale, FieldManager("b", "apps/v1"), force=True)
    assert forced["spec"]["replicas"] == 5
    smaller = copy.deepcopy(DEP)
    del smaller["spec"]["replicas"]
    del smaller["metadata"]["labels"]
    result = apply_configuration(s, forced, smaller, FieldManager("a", "apps/v1"), force=False)
    assert result["spec"]["replicas"] == 5  # b's
    assert "labels" not in result["metadata"] or "app" not in result["metadata"]["labels"]  # only a's: removed


def test_manager_from_user_agent() -> None:
    assert manager_from("", "kubectl/v1.33.1 (linux/amd64) kubernetes/abc") == "kubectl"
    assert manager_from("mine", "kubectl/v1.33.1") == "mine"
