"""Endpoints and EndpointSlice computation: ready/notReady addresses, named ports, hostnames, slicing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pykubeadm.controllers.endpoint.controller import desired_endpoints_object, desired_subsets
from pykubeadm.controllers.endpointslice.controller import MANAGED_BY, desired_endpoints, plan_slices
from pykubeadm.controllers.endpointsutil import TriggerTimeTracker, find_port, format_rfc3339_nano


def service(**spec: Any) -> dict[str, Any]:
    base = {
        "selector": {"app": "web"},
        "clusterIP": "10.96.0.10",
        "ports": [{"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"}],
    }
    return {
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "uid": "svc-uid",
            "labels": {"team": "a"},
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {**base, **spec},
    }


def pod(name: str, ip: str, ready: bool = True, port: int = 8080, node: str = "n1", **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {"app": "web"}},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "ports": [{"name": "web", "containerPort": port, "protocol": "TCP"}]}],
            **extra,
        },
        "status": {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": "2026-01-01T00:00:05Z"}
            ],
        },
    }


def test_ready_and_not_ready_addresses_with_named_target_port() -> None:
    subsets = desired_subsets(service(), [pod("b", "10.0.0.2"), pod("a", "10.0.0.10"), pod("c", "10.0.0.3", False)])
    assert len(subsets) == 1
    (subset,) = subsets
    assert [a["ip"] for a in subset["addresses"]] == ["10.0.0.2", "10.0.0.10"]  # sorted numerically
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.0.0.3"]
    assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    addr = subset["addresses"][0]
    assert addr["nodeName"] == "n1"
    assert addr["targetRef"] == {"kind": "Pod", "namespace": "ns", "name": "b", "uid": "uid-b"}
    assert "hostname" not in addr


def test_pods_resolving_a_named_port_differently_get_separate_subsets() -> None:
    subsets = desired_subsets(service(), [pod("a", "10.0.0.1", port=8080), pod("b", "10.0.0.2", port=9090)])
    assert sorted((s["addresses"][0]["ip"], s["ports"][0]["port"]) for s in subsets) == [
        ("10.0.0.1", 8080),
        ("10.0.0.2", 9090),
    ]


def test_pod_without_the_named_port_is_left_out() -> None:
    bare = pod("a", "10.0.0.1")
    bare["spec"]["containers"][0]["ports"] = []
    assert desired_subsets(service(), [bare]) == []
    assert find_port(bare, {"port": 80, "targetPort": 8443}) == 8443
    assert find_port(bare, {"port": 80}) == 80


def test_publish_not_ready_terminal_and_ipless_pods() -> None:
    done = pod("done", "10.0.0.4")
    done["status"]["phase"] = "Succeeded"
    no_ip = pod("pending", "")
    no_ip["status"]["podIPs"] = []
    deleting = pod("del", "10.0.0.5")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    pods = [pod("c", "10.0.0.3", False), done, no_ip, deleting]
    (subset,) = desired_subsets(service(publishNotReadyAddresses=True), pods)
    assert [a["ip"] for a in subset["addresses"]] == ["10.0.0.3", "10.0.0.5"]
    assert "notReadyAddresses" not in subset
    (subset,) = desired_subsets(service(), pods)
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.0.0.3"]  # terminating pods are dropped


def test_hostname_for_matching_subdomain_and_headless_without_ports() -> None:
    svc = service(clusterIP="None", ports=[])
    p = pod("a", "10.0.0.1", hostname="web-0", subdomain="web")
    (subset,) = desired_subsets(svc, [p])
    assert subset["addresses"][0]["hostname"] == "web-0"
    assert "ports" not in subset
    assert desired_subsets(service(ports=[]), [p]) == []  # a ClusterIP Service without ports gets nothing


def test_endpoints_object_labels_annotations_and_no_op() -> None:
    svc = service(clusterIP="None")
    subsets = desired_subsets(svc, [pod("a", "10.0.0.1")])
    new = desired_endpoints_object(svc, subsets, None, "2026-01-01T00:00:05Z")
    assert new is not None
    assert new["metadata"]["labels"] == {
        "team": "a",
        "service.kubernetes.io/headless": "",
        "endpoints.kubernetes.io/managed-by": "endpoint-controller",
    }
    assert new["metadata"]["annotations"] == {
        "endpoints.kubernetes.io/last-change-trigger-time": "2026-01-01T00:00:05Z"
    }
    new["subsets"][0]["addresses"][0]["targetRef"]["resourceVersion"] = "7"  # the server may add it
    assert desired_endpoints_object(svc, subsets, new, None) is None


def test_trigger_time_tracker() -> None:
    tracker = TriggerTimeTracker()
    svc = service()
    a = pod("a", "10.0.0.1")
    assert tracker.compute(svc, [a]) == datetime(2026, 1, 1, tzinfo=UTC)  # new Service: its creation
    assert tracker.compute(svc, [a]) is None  # nothing changed
    b = pod("b", "10.0.0.2")
    b["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:01:00.250Z"
    when = tracker.compute(svc, [a, b])
    assert when is not None and format_rfc3339_nano(when) == "2026-01-01T00:01:00.25Z"
    # a failed write puts the state back: the retry reports the same trigger time
    c = pod("c", "10.0.0.3")
    c["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:02:00Z"
    before = tracker.snapshot("ns", "web")
    first = tracker.compute(svc, [a, b, c])
    tracker.restore("ns", "web", before)
    assert tracker.compute(svc, [a, b, c]) == first == datetime(2026, 1, 1, 0, 2, tzinfo=UTC)


def test_endpoint_slice_endpoints_conditions() -> None:
    deleting = pod("d", "10.0.0.4")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    groups = desired_endpoints(service(), [pod("a", "10.0.0.1"), pod("c", "10.0.0.3", False), deleting])
    (key,) = groups
    assert key == (("http", 8080, "TCP", None),)
    by_name = {e["targetRef"]["name"]: e for e in groups[key]}
    assert by_name["a"]["conditions"] == {"ready": True, "serving": True, "terminating": False}
    assert by_name["c"]["conditions"] == {"ready": False, "serving": False, "terminating": False}
    assert by_name["d"]["conditions"] == {"ready": False, "serving": True, "terminating": True}
    assert by_name["a"]["addresses"] == ["10.0.0.1"] and by_name["a"]["nodeName"] == "n1"
    assert "zone" not in by_name["a"]
    (zoned,) = desired_endpoints(service(), [pod("a", "10.0.0.1")], {"n1": "zone-a"}).values()
    assert zoned[0]["zone"] == "zone-a"


def test_slices_created_with_labels_owner_and_at_most_max_endpoints() -> None:
    svc = service()
    pods = [pod(f"p{i:03d}", f"10.0.{i // 200}.{i % 200 + 1}") for i in range(250)]
    plan = plan_slices(svc, [], desired_endpoints(svc, pods), 100, "2026-01-01T00:00:05Z")
    assert [len(s["endpoints"]) for s in plan.create] == [100, 100, 50]
    first = plan.create[0]
    assert first["metadata"]["generateName"] == "web-"
    assert first["metadata"]["labels"] == {
        "team": "a",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
    }
    assert first["metadata"]["ownerReferences"][0] == {
        "apiVersion": "v1",
        "kind": "Service",
        "name": "web",
        "uid": "svc-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert first["addressType"] == "IPv4"
    assert first["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]


def test_existing_slices_are_updated_in_place_and_emptied_ones_deleted() -> None:
    svc = service()
    desired = desired_endpoints(svc, [pod("a", "10.0.0.1"), pod("b", "10.0.0.2")])
    (created,) = plan_slices(svc, [], desired).create
    created["metadata"]["name"] = "web-abcde"
    other = {**created, "metadata": {**created["metadata"], "name": "web-zzzzz"}, "endpoints": []}
    assert plan_slices(svc, [created], desired).empty
    # b becomes not ready: one update of the same slice
    desired2 = desired_endpoints(svc, [pod("a", "10.0.0.1"), pod("b", "10.0.0.2", False)])
    plan = plan_slices(svc, [created, other], desired2)
    assert not plan.create and plan.delete == ["web-zzzzz"]
    (updated,) = plan.update
    assert updated["metadata"]["name"] == "web-abcde"
    assert [e["conditions"]["ready"] for e in updated["endpoints"]] == [True, False]


def test_service_without_endpoints_gets_one_placeholder_slice() -> None:
    svc = service()
    plan = plan_slices(svc, [], {})
    (placeholder,) = plan.create
    assert placeholder["endpoints"] == [] and placeholder["ports"] == []
    placeholder["metadata"]["name"] = "web-ph"
    assert plan_slices(svc, [placeholder], {}).empty
