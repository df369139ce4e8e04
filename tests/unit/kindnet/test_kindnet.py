"""The network addon's pieces that need no namespace: the conflist, the route plan, the objects, the image."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykubeadm.kindnet.conflist import CONFLIST_NAME, render_conflist, write_conflist
from pykubeadm.kindnet.manifests import KINDNET_IMAGE, kindnet_objects
from pykubeadm.kindnet.routes import desired_routes
from pykubeadm.kubelet.builtin.runtime import resolve_program


def node(name: str, ips: list[str], cidrs: list[str]) -> dict:
    return {
        "metadata": {"name": name},
        "spec": {"podCIDR": cidrs[0], "podCIDRs": cidrs} if cidrs else {},
        "status": {"addresses": [{"type": "InternalIP", "address": ip} for ip in ips]},
    }


def test_the_conflist_is_bridge_host_local_portmap_on_the_pod_cidr() -> None:
    doc = render_conflist(["10.244.1.0/24"])
    assert doc["cniVersion"] == "0.4.0" and doc["name"] == "kindnet"
    bridge, portmap = doc["plugins"]
    assert (bridge["type"], bridge["bridge"], bridge["isGateway"], bridge["hairpinMode"]) == (
        "bridge",
        "cni0",
        True,
        True,
    )
    assert bridge["ipMasq"] is False  # the addon masquerades only what leaves the cluster's Pod network
    assert bridge["ipam"] == {
        "type": "host-local",
        "ranges": [[{"subnet": "10.244.1.0/24"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
    }
    assert portmap == {"type": "portmap", "capabilities": {"portMappings": True}}
    dual = render_conflist(["10.244.1.0/24", "fd00:10:244:1::/64"])["plugins"][0]["ipam"]
    assert dual["routes"] == [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}] and len(dual["ranges"]) == 2
    with pytest.raises(ValueError, match=r"invalid podCIDR '10\.244\.1\.1/24'"):
        render_conflist(["10.244.1.1/24"])
    with pytest.raises(ValueError, match="no podCIDR"):
        render_conflist([])


def test_the_conflist_is_written_atomically_and_only_on_change(tmp_path: Path) -> None:
    conf_dir = tmp_path / "etc/cni/net.d"
    doc = render_conflist(["10.244.1.0/24"])
    assert write_conflist(conf_dir, doc)
    path = conf_dir / CONFLIST_NAME
    assert json.loads(path.read_text()) == doc and path.stat().st_mode & 0o777 == 0o644
    inode = path.stat().st_ino
    assert not write_conflist(conf_dir, doc) and path.stat().st_ino == inode
    assert write_conflist(conf_dir, render_conflist(["10.244.9.0/24"])) and path.stat().st_ino != inode
    assert [p.name for p in conf_dir.iterdir()] == [CONFLIST_NAME]


def test_routes_go_to_the_other_nodes_through_their_internal_ips() -> None:
    nodes = [
        node("a", ["10.250.0.2"], ["10.244.0.0/24"]),
        node("b", ["10.250.0.3", "fd00::3"], ["10.244.1.0/24", "fd00:10:244:1::/64"]),
        node("c", ["10.250.0.4"], []),  # no podCIDR yet
        node("d", [], ["10.244.3.0/24"]),  # no address yet
    ]
    assert desired_routes(nodes, "a") == {"10.244.1.0/24": "10.250.0.3", "fd00:10:244:1::/64": "fd00::3"}
    assert desired_routes(nodes, "b") == {"10.244.0.0/24": "10.250.0.2"}


def test_the_objects_let_the_agent_read_nodes_on_every_node() -> None:
    sa, role, binding, ds = kindnet_objects(pod_subnet="10.244.0.0/16", control_plane_endpoint="lab-control-plane:6443")
    assert (sa["kind"], sa["metadata"]) == ("ServiceAccount", {"name": "kindnet", "namespace": "kube-system"})
    assert role["kind"] == "ClusterRole"
    assert role["rules"] == [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["nodes"]}]
    assert binding["roleRef"]["name"] == "kindnet"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kindnet", "namespace": "kube-system"}]
    spec = ds["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True and spec["tolerations"] == [{"operator": "Exists"}]
    assert spec["serviceAccountName"] == "kindnet"
    ct = spec["containers"][0]
    assert ct["image"] == KINDNET_IMAGE
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in ct["env"]}
    assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env["POD_SUBNET"] == "10.244.0.0/16" and env["CONTROL_PLANE_ENDPOINT"] == "lab-control-plane:6443"
    mounts = {m["name"]: m["mountPath"] for m in ct["volumeMounts"]}
    vols = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    assert mounts["cni-cfg"] == vols["cni-cfg"] == "/etc/cni/net.d"


def test_the_image_runs_the_built_in_program() -> None:
    program = resolve_program(KINDNET_IMAGE)
    assert program.entrypoint[-2:] == ("component", "kindnetd") and program.version == "v20250512-df8de77b"


def test_masquerading_spares_the_cluster_pod_network() -> None:
    from pykubeadm.kindnet.masq import masq_ruleset

    script = masq_ruleset(["10.244.1.0/24"], ["10.244.0.0/16"])
    assert "ip saddr { 10.244.1.0/24 } ip daddr != { 10.244.0.0/16 } masquerade" in script
    assert script.startswith("table ip kindnet-masq {}\ndelete table ip kindnet-masq\n")  # replaced as a whole
    assert "table ip6 kindnet-masq {\n" not in script  # no IPv6 pod range: the table is only removed


def test_the_manifest_is_the_objects_as_yaml() -> None:
    import yaml

    from pykubeadm.kindnet.manifests import kindnet_manifest

    docs = list(yaml.safe_load_all(kindnet_manifest(pod_subnet="10.244.0.0/16")))
    assert [d["kind"] for d in docs] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet"]
    assert docs == kindnet_objects(pod_subnet="10.244.0.0/16")


def test_a_status_heartbeat_changes_no_sync_input() -> None:
    """The agent skips a sync whose inputs are the last one's: a Node's status change (a heartbeat, a condition) is
    none; a new node's podCIDR, or its address, is."""
    from pykubeadm.kindnet.agent import sync_inputs

    nodes = [node("a", ["172.18.1.1"], ["10.244.0.0/24"]), node("b", ["172.18.1.2"], ["10.244.1.0/24"])]
    before = sync_inputs(nodes, "a")
    assert before == (["10.244.0.0/24"], {"10.244.1.0/24": "172.18.1.2"}, ["10.244.0.0/24", "10.244.1.0/24"])
    nodes[1]["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert sync_inputs(nodes, "a") == before
    nodes.append(node("c", ["172.18.1.3"], ["10.244.2.0/24"]))
    assert sync_inputs(nodes, "a") != before
    assert sync_inputs(nodes, "a", ["10.244.0.0/16"])[2] == ["10.244.0.0/16"]
