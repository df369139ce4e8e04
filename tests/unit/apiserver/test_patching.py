"""Patch algorithms: strategic merge (merge keys, $setElementOrder, $patch, $retainKeys), JSON patch, merge patch."""

import pytest

from pykubeadm.apiserver.patching import PatchError, apply_json_patch, apply_merge_patch, apply_strategic_merge_patch


def _deploy(containers):
    return {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": containers}}}}


def test_smp_kubectl_apply_shape_keeps_second_container_and_orders():
    live = _deploy(
        [
            {"name": "a", "image": "nginx:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
            {"name": "b", "image": "busybox"},
        ]
    )
    # The exact body kubectl 1.33 sends (reference/apiserver-wire-facts.md §6.2).
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                    "containers": [
                        {
                            "$setElementOrder/env": [{"name": "X"}, {"name": "Y"}],
                            "env": [{"name": "Y", "value": "4"}],
                            "image": "nginx:3",
                            "name": "a",
                        }
                    ],
                }
            }
        }
    }
    out = apply_strategic_merge_patch(live, patch, "Deployment")
    cs = out["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in cs] == ["a", "b"]
    assert cs[0]["image"] == "nginx:3"
    assert cs[0]["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "4"}]
    assert cs[1] == {"name": "b", "image": "busybox"}
    assert "$setElementOrder/containers" not in str(out)


def test_smp_set_element_order_reorders_and_server_only_items_keep_slots():
    live = _deploy([{"name": "a"}, {"name": "s"}, {"name": "b"}])
    patch = {"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}}}
    cs = apply_strategic_merge_patch(live, patch, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in cs] == ["b", "s", "a"]


def test_smp_delete_directive_and_replace_and_null():
    live = _deploy([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])
    out = apply_strategic_merge_patch(
        live, {"spec": {"template": {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}}}, "Deployment"
    )
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["b"]
    out = apply_strategic_merge_patch(
        live,
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "z"}, {"$patch": "replace"}]}}}},
        "Deployment",
    )
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "c", "image": "z"}]
    out = apply_strategic_merge_patch(
        {"metadata": {"labels": {"a": "1", "b": "2"}}}, {"metadata": {"labels": {"a": None}}}, "ConfigMap"
    )
    assert out["metadata"]["labels"] == {"b": "2"}


def test_smp_atomic_lists_are_replaced_and_scalar_merge_lists_union():
    node = {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}], "podCIDRs": ["10.0.0.0/24"]}}
    out = apply_strategic_merge_patch(
        node, {"spec": {"taints": [{"key": "b", "effect": "NoSchedule"}], "podCIDRs": ["10.0.1.0/24"]}}, "Node"
    )
    assert out["spec"]["taints"] == [{"key": "b", "effect": "NoSchedule"}]
    assert out["spec"]["podCIDRs"] == ["10.0.0.0/24", "10.0.1.0/24"]
    out = apply_strategic_merge_patch(
        {"metadata": {"finalizers": ["a", "b"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
        "ConfigMap",
    )
    assert out["metadata"]["finalizers"] == ["b"]


def test_smp_retain_keys_on_deployment_strategy():
    live = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    out = apply_strategic_merge_patch(
        live, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}, "Deployment"
    )
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_smp_merges_service_ports_by_port():
    svc = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}}
    out = apply_strategic_merge_patch(svc, {"spec": {"ports": [{"port": 80, "targetPort": 8080}]}}, "Service")
    assert out["spec"]["ports"] == [{"port": 80, "name": "http", "targetPort": 8080}, {"port": 443, "name": "https"}]


def test_merge_patch_replaces_lists():
    assert apply_merge_patch({"a": [1, 2], "b": {"c": 1, "d": 2}}, {"a": [3], "b": {"c": None}}) == {
        "a": [3],
        "b": {"d": 2},
    }


def test_json_patch_ops_and_errors():
    doc = {"metadata": {"labels": {"a/b": "1"}}, "list": [1, 2]}
    out = apply_json_patch(
        doc,
        [
            {"op": "add", "path": "/list/-", "value": 3},
            {"op": "replace", "path": "/metadata/labels/a~1b", "value": "2"},
            {"op": "copy", "from": "/list/0", "path": "/first"},
            {"op": "move", "from": "/first", "path": "/moved"},
            {"op": "remove", "path": "/list/1"},
            {"op": "test", "path": "/moved", "value": 1},
        ],
    )
    assert out == {"metadata": {"labels": {"a/b": "2"}}, "list": [1, 3], "moved": 1}
    assert doc["list"] == [1, 2]  # input untouched
    with pytest.raises(PatchError):
        apply_json_patch(doc, [{"op": "replace", "path": "/nope", "value": 1}])
    with pytest.raises(PatchError):
        apply_json_patch(doc, [{"op": "test", "path": "/list/0", "value": 9}])
    with pytest.raises(ValueError):
        apply_json_patch(doc, [{"op": "frobnicate", "path": "/a"}])
