"""The ruleset text handed to `nft -f -`: kube-proxy's table layout, only `ip kube-proxy`, one transaction."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

import pytest

from pykubeadm.proxy.nftables import NftError, build_ruleset, nft_binary
from pykubeadm.proxy.servicemap import build_table


def svc(name: str, ip: str, **spec: Any) -> dict[str, Any]:
    base = {"type": "ClusterIP", "clusterIP": ip, "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": base | spec}


def slice_(name: str, *ips: str, ready: bool = True, node: str = "n1") -> dict[str, Any]:
    return {
        "metadata": {"name": f"{name}-1", "namespace": "ns", "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "nodeName": node, "conditions": {"ready": ready}} for ip in ips],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }


def rules(services: list[dict[str, Any]], slices: list[dict[str, Any]], **kw: Any) -> str:
    kw.setdefault("node_ips", ["192.168.1.10"])
    return build_ruleset(build_table(services, slices), family=4, node_name="n1", **kw).text


def test_every_line_addresses_only_the_kube_proxy_table() -> None:
    text = rules(
        [svc("web", "10.96.0.5", type="NodePort", ports=[{"name": "http", "port": 80, "nodePort": 30080}])],
        [slice_("web", "10.244.0.5")],
    )
    for line in text.splitlines():
        verb = line.split(" ", 2)[:2]
        assert line.split()[2:4] == ["ip", "kube-proxy"], line
        assert verb[0] in ("add", "flush", "delete")
    assert "delete table ip kube-proxy" in text  # first sync: the whole table is rebuilt in one transaction


def test_clusterip_and_nodeport_dispatch_to_service_chains() -> None:
    text = rules(
        [svc("web", "10.96.0.5", type="NodePort", ports=[{"name": "http", "port": 80, "nodePort": 30080}])],
        [slice_("web", "10.244.0.5", "10.244.0.6")],
    )
    assert "add element ip kube-proxy service-ips { 10.96.0.5 . tcp . 80 : goto service-" in text
    assert "add element ip kube-proxy service-nodeports { tcp . 30080 : goto external-" in text
    assert "add element ip kube-proxy nodeport-ips { 192.168.1.10 }" in text
    assert "numgen random mod 2 vmap { 0 : goto endpoint-" in text
    assert "meta l4proto tcp dnat to 10.244.0.5:8080" in text and "dnat to 10.244.0.6:8080" in text
    assert "add rule ip kube-proxy mark-for-masquerade mark set mark or 0x00004000" in text
    chain = next(line.split()[-1] for line in text.splitlines() if line.startswith("add chain ip kube-proxy service-"))
    assert chain.endswith("-ns/web/tcp/http") and len(chain.split("-")[1]) == 8


def test_not_ready_endpoints_get_no_chain() -> None:
    text = rules(
        [svc("web", "10.96.0.5")],
        [
            slice_("web", "10.244.0.5"),
            {
                **slice_("web", "10.244.0.6", ready=False),
                "metadata": {"name": "web-2", "namespace": "ns", "labels": {"kubernetes.io/service-name": "web"}},
            },
        ],
    )
    assert "10.244.0.6" not in text and "numgen random mod 1 " in text


def test_no_endpoints_rejects_and_local_policy_without_local_endpoint_drops() -> None:
    text = rules(
        [svc("empty", "10.96.0.6"), svc("loc", "10.96.0.7", internalTrafficPolicy="Local")],
        [slice_("loc", "10.244.0.9", node="n2")],
    )
    assert 'no-endpoint-services { 10.96.0.6 . tcp . 80 comment "ns/empty:http" : goto reject-chain }' in text
    assert 'no-endpoint-services { 10.96.0.7 . tcp . 80 comment "ns/loc:http" : drop }' in text
    assert "service-ips { 10.96.0.6" not in text


def test_session_affinity_sets_with_timeout() -> None:
    text = rules(
        [
            svc(
                "web",
                "10.96.0.5",
                sessionAffinity="ClientIP",
                sessionAffinityConfig={"clientIP": {"timeoutSeconds": 300}},
            )
        ],
        [slice_("web", "10.244.0.5")],
    )
    assert "flags dynamic,timeout ; timeout 300s" in text
    assert "update @affinity-" in text and "ip saddr @affinity-" in text


def test_later_syncs_write_only_what_changed() -> None:
    web, other = svc("web", "10.96.0.5"), svc("other", "10.96.0.6")
    first = build_ruleset(
        build_table([web, other], [slice_("web", "10.244.0.5"), slice_("other", "10.244.0.8")]),
        family=4,
        node_name="n1",
        node_ips=[],
    )
    second = build_ruleset(
        build_table([web, other], [slice_("web", "10.244.0.6"), slice_("other", "10.244.0.8")]),
        family=4,
        node_name="n1",
        node_ips=[],
        previous=first,
    )
    text = second.text
    assert "delete table" not in text and "flush map" not in text
    assert "10.244.0.8" not in text and "ns/other/" not in text  # unchanged service: not touched
    assert "dnat to 10.244.0.6:8080" in text
    old_ep = next(c for c in first.chains if "10.244.0.5" in c)
    assert f"flush chain ip kube-proxy {old_ep}" in text  # stale: flushed now, deleted later
    third = build_ruleset(
        build_table([other], [slice_("other", "10.244.0.8")]),
        family=4,
        node_name="n1",
        node_ips=[],
        previous=second,
        stale_chains=[old_ep],
    )
    assert f"delete chain ip kube-proxy {old_ep}" in third.text
    assert "delete element ip kube-proxy service-ips { 10.96.0.5 . tcp . 80 }" in third.text
    assert not any("ns/web/" in c for c in third.chains)


def test_full_resync_flushes_maps_and_rewrites_every_service() -> None:
    table = build_table([svc("web", "10.96.0.5")], [slice_("web", "10.244.0.5")])
    first = build_ruleset(table, family=4, node_name="n1", node_ips=[])
    full = build_ruleset(table, family=4, node_name="n1", node_ips=[], previous=first, full=True)
    assert "delete table" not in full.text and "flush map ip kube-proxy service-ips" in full.text
    assert "service-ips { 10.96.0.5 . tcp . 80 : goto service-" in full.text
    assert build_ruleset(table, family=4, node_name="n1", node_ips=[], previous=first).text.count("\n") == 1


def test_loopback_node_ips_are_not_nodeport_addresses() -> None:
    text = rules([], [], node_ips=["127.0.10.1", "192.168.1.10"])
    assert "127.0.10.1" not in text


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("nft") is None or shutil.which("unshare") is None, reason="needs root and nft"
)
def test_nft_accepts_the_ruleset_in_a_private_namespace() -> None:
    text = rules(
        [
            svc(
                "web",
                "10.96.0.5",
                type="NodePort",
                sessionAffinity="ClientIP",
                ports=[{"name": "http", "port": 80, "nodePort": 30080}],
            ),
            svc("e", "10.96.0.6"),
        ],
        [slice_("web", "10.244.0.5", "10.244.0.6")],
        cluster_cidrs=["10.244.0.0/16"],
    )
    out = subprocess.run(
        ["unshare", "-n", "nft", "-c", "-f", "-"], input=text, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr


def test_missing_nft_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _: None)
    monkeypatch.setattr(os, "access", lambda *_: False)
    with pytest.raises(NftError, match='Debian package "nftables"'):
        nft_binary()
