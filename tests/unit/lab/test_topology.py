"""lab.topology: which topology `lab up` builds and the one line saying why, `--publish` values, the netns lab's
kubeadm configuration (kubeadm's Service range, the host's names in the API server certificate, nftables kube-proxy).
The topology itself is built by tests/e2e/test_lab_netns.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykubeadm import constants as c
from pykubeadm.errors import KubeadmError
from pykubeadm.lab import network, topology
from pykubeadm.lab.nodes import init_config, new_node


def test_publish_flags_parse_and_bad_ones_name_the_flag() -> None:
    assert topology.parse_publish(["8080:30080", "30081"]) == [(8080, 30080), (30081, 30081)]
    for bad in ("http", "8080:", "0:30080", "8080:70000"):
        with pytest.raises(KubeadmError, match=rf'invalid --publish "{bad}": use PORT\[:NODEPORT\]'):
            topology.parse_publish([bad])


def test_loopback_when_asked_says_so_in_one_line(tmp_path: Path) -> None:
    said: list[str] = []
    assert topology.choose("loopback", tmp_path, said.append) == "loopback"
    assert len(said) == 1 and said[0].startswith("[lab] Topology: loopback (asked for)")
    assert not network.netns_root(tmp_path).exists()


def test_not_root_falls_back_to_loopback_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(network.os, "geteuid", lambda: 1000)
    said: list[str] = []
    assert topology.choose(None, tmp_path, said.append) == "loopback"
    assert said == [
        "[lab] Topology: loopback, because not running as root (network namespaces need CAP_SYS_ADMIN and "
        "CAP_NET_ADMIN): every node in the host's network namespace on 127.0.10.x"
    ]
    with pytest.raises(KubeadmError, match="--topology netns cannot be built: not running as root"):
        topology.choose("netns", tmp_path, said.append)


def test_unknown_topology_is_refused(tmp_path: Path) -> None:
    with pytest.raises(KubeadmError, match='invalid --topology "docker": use netns or loopback'):
        topology.choose("docker", tmp_path, print)


def test_netns_lab_config_has_kubeadm_defaults_and_the_hosts_names(tmp_path: Path) -> None:
    cp = new_node(tmp_path, [], control_plane=True, prefix=network.NODE_PREFIX, netns=True)
    assert cp.address == "172.18.1.1" and cp.namespaces == str(tmp_path / ".lab/netns/lab-control-plane")
    docs = {d["kind"]: d for d in init_config(cp, "abcdef.0123456789abcdef", "sqlite")}
    cluster, proxy = docs["ClusterConfiguration"], docs["KubeProxyConfiguration"]
    assert cluster["networking"]["serviceSubnet"] == c.DEFAULT_SERVICE_SUBNET == "10.96.0.0/12"
    assert cluster["apiServer"]["certSANs"] == ["127.0.0.1", "localhost"]
    assert proxy == {
        "apiVersion": c.KUBE_PROXY_CONFIG_API_VERSION,
        "kind": "KubeProxyConfiguration",
        "mode": "nftables",
    }
    worker = new_node(tmp_path, [cp], control_plane=False)
    assert worker.netns and worker.address == "172.18.1.2"
    loopback = new_node(tmp_path, [], control_plane=True, prefix="127.0.10.")
    kinds = [d["kind"] for d in init_config(loopback, "abcdef.0123456789abcdef", "sqlite")]
    assert "KubeProxyConfiguration" not in kinds and not loopback.namespaces
