"""The kubelet's side of the Pod network without plugins: readiness from the conf dir (followed with inotify), the
Node's Ready message, hostPorts as portmap's capability, host-local's store under the node's root."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from pykubeadm.kubelet.builtin.podnetwork import NETWORK_NOT_READY, PodNetwork, port_mappings
from pykubeadm.kubelet.node import node_conditions
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


async def _until_made(path: Path) -> None:
    for _ in range(1000):
        if path.is_dir():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} was not made")


async def test_the_conf_dir_is_followed_as_it_changes(tmp_path: Path) -> None:
    """A conflist written (atomically, as kindnet writes it), then removed, then the directory itself removed and made
    again: each is seen without waiting for the periodic re-read (an hour here), and wakes the Pods' waiters."""
    layout = Layout(tmp_path / "node")
    conf_dir = layout.host("/etc/cni/net.d")
    net = PodNetwork(conf_dir, ["/usr/lib/cni"], layout.host("/var/lib/cni"), layout)
    changes = asyncio.Queue[None]()
    watcher = asyncio.create_task(net.watch(lambda: changes.put_nowait(None), resync=3600))
    try:
        # the watch makes the directory (as containerd does) and watches it in one step of the event loop: once the
        # directory is there, the next change is an event
        await _until_made(conf_dir)
        assert net.status() == NETWORK_NOT_READY
        waiter = asyncio.create_task(net.wait_change(3600))
        tmp = conf_dir / ".10-kindnet.conflist.tmp"
        tmp.write_text(json.dumps(CONFLIST))
        os.rename(tmp, conf_dir / "10-kindnet.conflist")
        await asyncio.wait_for(changes.get(), 10)
        assert net.status() is None
        await asyncio.wait_for(waiter, 10)  # a Pod waiting for the network goes on at once
        (conf_dir / "10-kindnet.conflist").unlink()
        await asyncio.wait_for(changes.get(), 10)
        assert net.status() == NETWORK_NOT_READY
        conf_dir.rmdir()  # the directory itself: watched again once made again
        await _until_made(conf_dir)
        (conf_dir / "10-kindnet.conflist").write_text(json.dumps(CONFLIST))
        await asyncio.wait_for(changes.get(), 10)
        assert net.status() is None
    finally:
        watcher.cancel()


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
