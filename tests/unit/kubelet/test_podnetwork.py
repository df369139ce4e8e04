"""The kubelet's side of the Pod network without plugins: readiness from the conf dir, the Node's Ready message,
hostPorts as portmap's capability, host-local's store under the node's root."""

from __future__ import annotations

import json
from pathlib import Path

from pykubeadm.kubelet.node import node_conditions
from pykubeadm.kubelet.podnetwork import NETWORK_NOT_READY, PodNetwork, port_mappings
from pykubeadm.layout import Layout

CONFLIST = {
    "cniVersion": "0.4.0",
    "name": "kindnet",
    "plugins": [
        {"type": "bridge", "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.1.0/24"}]]}},
        {"type": "portmap", "capabilities": {"portMappings": True}},
    ],
}


def test_readiness_follows_the_conf_dir(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "node")
    net = PodNetwork(layout.host("/etc/cni/net.d"), ["/usr/lib/cni"], layout.host("/var/lib/cni"), layout)
    assert not net.sync()
    assert net.status() == NETWORK_NOT_READY
    conf = layout.host("/etc/cni/net.d/10-kindnet.conflist")
    conf.parent.mkdir(parents=True)
    conf.write_text(json.dumps(CONFLIST))
    assert net.sync() and net.status() is None
    assert not net.sync()  # nothing changed
    conf.write_text("{broken")
    assert net.sync() and net.status() == NETWORK_NOT_READY


def test_the_ready_condition_carries_the_runtime_error() -> None:
    ready = node_conditions(ready=False, not_ready=NETWORK_NOT_READY)[-1]
    assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "False", "KubeletNotReady")
    assert ready["message"] == (
        "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
        "message:Network plugin returns error: cni plugin not initialized"
    )
    assert node_conditions(ready=True)[-1]["message"] == "kubelet is posting ready status"


def test_host_ports_become_port_mappings() -> None:
    pod = {
        "spec": {
            "containers": [
                {"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 9090}]},
                {
                    "name": "b",
                    "ports": [{"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}],
                },
            ]
        }
    }
    assert port_mappings(pod) == [
        {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
        {"hostPort": 53, "containerPort": 53, "protocol": "udp", "hostIP": "10.0.0.1"},
    ]


def test_host_local_keeps_its_store_under_the_node_root(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "node")
    conf = layout.host("/etc/cni/net.d/10-kindnet.conflist")
    conf.parent.mkdir(parents=True)
    conf.write_text(json.dumps(CONFLIST))
    net = PodNetwork(conf.parent, ["/usr/lib/cni"], layout.host("/var/lib/cni"), layout)
    net.sync()
    assert net.network is not None
    view = net._node_view(net.network)
    assert view.plugins[0]["ipam"]["dataDir"] == str(tmp_path / "node/var/lib/cni/networks")
    assert json.loads(view.raw)["plugins"][0]["ipam"]["dataDir"] == str(tmp_path / "node/var/lib/cni/networks")
