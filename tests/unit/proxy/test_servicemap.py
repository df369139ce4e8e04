"""Which endpoints a Service gets on a node: ready only, Local traffic policies, headless Services left alone."""

from __future__ import annotations

from typing import Any

from pykubeadm.proxy.servicemap import ServicePortName, build_table, categorize, service_ports


def svc(name: str, **spec: Any) -> dict[str, Any]:
    base = {
        "type": "ClusterIP",
        "clusterIP": "127.96.0.10",
        "clusterIPs": ["127.96.0.10"],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": base | spec}


def eps(
    name: str, *endpoints: dict[str, Any], port: int = 8080, port_name: str = "http", slice_name: str = ""
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": slice_name or f"{name}-1",
            "namespace": "ns",
            "labels": {"kubernetes.io/service-name": name},
        },
        "addressType": "IPv4",
        "endpoints": list(endpoints),
        "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
    }


def ep(ip: str, node: str = "", **conditions: Any) -> dict[str, Any]:
    return {"addresses": [ip], "nodeName": node, "conditions": conditions}


KEY = ServicePortName("ns", "web", "http", "TCP")


def test_only_ready_endpoints_are_used() -> None:
    table = build_table(
        [svc("web")], [eps("web", ep("10.0.0.1", ready=True), ep("10.0.0.2", ready=False), ep("10.0.0.3"))]
    )
    cat = categorize(table.ports[KEY], table.endpoints[KEY], "n1")
    assert [e.ip for e in cat.cluster] == ["10.0.0.1", "10.0.0.3"]  # nil ready counts as ready


def test_serving_terminating_endpoints_are_the_fallback() -> None:
    table = build_table(
        [svc("web")],
        [eps("web", ep("10.0.0.1", ready=False, serving=True, terminating=True), ep("10.0.0.2", ready=False))],
    )
    cat = categorize(table.ports[KEY], table.endpoints[KEY], "n1")
    assert [e.ip for e in cat.cluster] == ["10.0.0.1"]


def test_internal_traffic_policy_local() -> None:
    table = build_table(
        [svc("web", internalTrafficPolicy="Local")], [eps("web", ep("10.0.0.1", "n1"), ep("10.0.0.2", "n2"))]
    )
    sp = table.ports[KEY]
    on_n1, on_n3 = categorize(sp, table.endpoints[KEY], "n1"), categorize(sp, table.endpoints[KEY], "n3")
    assert [e.ip for e in on_n1.internal(sp)] == ["10.0.0.1"]
    assert on_n3.internal(sp) == [] and on_n3.has_any


def test_external_traffic_policy_local_keeps_clusterip_cluster_wide() -> None:
    table = build_table(
        [
            svc(
                "web",
                type="NodePort",
                externalTrafficPolicy="Local",
                ports=[{"name": "http", "port": 80, "nodePort": 30080}],
            )
        ],
        [eps("web", ep("10.0.0.1", "n1"), ep("10.0.0.2", "n2"))],
    )
    sp = table.ports[KEY]
    cat = categorize(sp, table.endpoints[KEY], "n2")
    assert [e.ip for e in cat.external(sp)] == ["10.0.0.2"]
    assert [e.ip for e in cat.internal(sp)] == ["10.0.0.1", "10.0.0.2"]


def test_headless_and_externalname_services_are_left_alone() -> None:
    assert service_ports(svc("h", clusterIP="None", clusterIPs=["None"])) == []
    assert service_ports(svc("x", type="ExternalName", externalName="example.org")) == []


def test_slices_merge_and_other_ports_do_not_match() -> None:
    table = build_table(
        [svc("web")],
        [
            eps("web", ep("10.0.0.1"), slice_name="web-a"),
            eps("web", ep("10.0.0.2"), slice_name="web-b"),
            eps("web", ep("10.0.0.9"), port_name="metrics", slice_name="web-c"),
        ],
    )
    assert [e.ip for e in table.endpoints[KEY]] == ["10.0.0.1", "10.0.0.2"]


def test_session_affinity_and_node_port_fields() -> None:
    (sp,) = service_ports(
        svc(
            "web",
            type="NodePort",
            sessionAffinity="ClientIP",
            sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}},
            ports=[{"name": "http", "port": 80, "nodePort": 30080, "protocol": "UDP"}],
        )
    )
    assert (sp.session_affinity, sp.affinity_timeout, sp.node_port, sp.protocol) == (True, 60, 30080, "UDP")
    (plain,) = service_ports(svc("web"))
    assert (plain.session_affinity, plain.affinity_timeout, plain.node_port) == (False, 10800, 0)
