"""The HA lab's pure parts: node naming and the registry, the per-node patches, the `lab up` argument rules, the
HAProxy configuration (validated by the real `haproxy -c` when installed) and the missing-binary message, and which
node holds a Lease according to the components' logs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from pykubeadm.errors import KubeadmError
from pykubeadm.lab import loadbalancer
from pykubeadm.lab.cluster import lab_up
from pykubeadm.lab.loadbalancer import LoadBalancer
from pykubeadm.lab.nodes import (
    control_plane_join_config,
    ha_init_config,
    lab_node,
    load_registry,
    new_node,
    save_registry,
    write_ha_patches,
)
from pykubeadm.lab.status import lease_holder_node


def test_nodes_are_named_like_kind_and_numbered_in_the_order_they_were_made(tmp_path: Path) -> None:
    nodes: list = []
    for cp in (True, False, True, True, False):
        nodes.append(new_node(tmp_path, nodes, cp))
    assert [(n.name, n.address, n.control_plane) for n in nodes] == [
        ("lab-control-plane", "127.0.10.1", True),
        ("lab-worker", "127.0.10.2", False),
        ("lab-control-plane2", "127.0.10.3", True),
        ("lab-control-plane3", "127.0.10.4", True),
        ("lab-worker2", "127.0.10.5", False),
    ]
    # a single-control-plane lab without a registry: node 0 and workers, as before
    assert [lab_node(tmp_path, i).name for i in range(3)] == ["lab-control-plane", "lab-worker", "lab-worker2"]


def test_registry_keeps_each_node_and_its_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYKUBEADM_LAB_ADDRESS_PREFIX", "127.0.77.")
    nodes = [new_node(tmp_path, [], True)]
    nodes.append(new_node(tmp_path, nodes, True))
    save_registry(tmp_path, nodes)
    monkeypatch.delenv("PYKUBEADM_LAB_ADDRESS_PREFIX")  # another shell later: the lab keeps its addresses
    loaded = load_registry(tmp_path)
    assert loaded == nodes
    assert new_node(tmp_path, loaded, False).address == "127.0.77.3"
    assert load_registry(tmp_path / "nothing") is None


def test_ha_configs_are_node_neutral_with_the_load_balancer_as_endpoint(tmp_path: Path) -> None:
    cp = new_node(tmp_path, [], True)
    init, cluster = ha_init_config(cp, "abcdef.0123456789abcdef", "ab" * 32, "127.0.10.250:6443")
    assert cluster["controlPlaneEndpoint"] == "127.0.10.250:6443"
    assert "127.0.10.1" not in yaml.safe_dump(cluster)  # no node address in what every control plane downloads
    assert init["certificateKey"] == "ab" * 32
    ext = {"endpoints": ["https://127.0.10.241:2379"], "caFile": "/ca", "certFile": "/c", "keyFile": "/k"}
    assert ha_init_config(cp, "t", "k", "e:6443", ext)[1]["etcd"] == {"external": ext}
    cp2 = new_node(tmp_path, [cp], True)
    join = control_plane_join_config(cp2, "127.0.10.250:6443", "abcdef.0123456789abcdef", "sha256:00", "cd" * 32)[0]
    assert join["discovery"]["bootstrapToken"]["apiServerEndpoint"] == "127.0.10.250:6443"
    assert join["controlPlane"] == {
        "localAPIEndpoint": {"advertiseAddress": "127.0.10.2", "bindPort": 6443},
        "certificateKey": "cd" * 32,
    }


def test_ha_patches_put_each_component_on_the_node_address(tmp_path: Path) -> None:
    node = new_node(tmp_path, [], True)
    write_ha_patches(node, stacked_etcd=True, joining=True)
    files = sorted(p.name for p in node.patches_dir.iterdir())
    assert files == [
        "etcd+json.yaml",
        "kube-apiserver+json.yaml",
        "kube-controller-manager+json.yaml",
        "kube-scheduler+json.yaml",
        "kubeletconfiguration+merge.yaml",
    ]
    etcd = yaml.safe_load((node.patches_dir / "etcd+json.yaml").read_text())
    # every replace is guarded by a test of kubeadm's default at that index (a joining member: one flag later)
    assert etcd[0] == {
        "op": "test",
        "path": "/spec/containers/0/command/11",
        "value": "--listen-client-urls=https://127.0.0.1:2379,https://127.0.10.1:2379",
    }
    assert etcd[1]["value"] == "--listen-client-urls=https://127.0.10.1:2379"
    api = yaml.safe_load((node.patches_dir / "kube-apiserver+json.yaml").read_text())
    assert api[1]["value"] == "--etcd-servers=https://127.0.10.1:2379"
    external = new_node(tmp_path, [node], True)
    write_ha_patches(external, stacked_etcd=False, joining=True)
    assert not (external.patches_dir / "etcd+json.yaml").exists()
    assert not (external.patches_dir / "kube-apiserver+json.yaml").exists()


def test_up_arguments(tmp_path: Path) -> None:
    with pytest.raises(
        KubeadmError, match=r"--control-planes 3 needs --datastore etcd .* or --datastore external-etcd"
    ):
        lab_up(tmp_path / "a", 1, "sqlite", control_planes=3)
    with pytest.raises(KubeadmError, match="--control-planes must be 1 or more"):
        lab_up(tmp_path / "a", 1, "etcd", control_planes=0)
    with pytest.raises(KubeadmError, match="invalid --datastore"):
        lab_up(tmp_path / "a", 1, "mysql")
    with pytest.raises(KubeadmError, match="--load-balancer needs --datastore etcd or external-etcd"):
        lab_up(tmp_path / "a", 1, "sqlite", with_load_balancer=True)
    assert not (tmp_path / "a").exists()


def test_even_control_planes_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loadbalancer.shutil, "which", lambda _: None)
    monkeypatch.setattr(loadbalancer.os, "access", lambda *_: False)
    said: list[str] = []
    with pytest.raises(KubeadmError, match="install the Debian package 'haproxy'"):
        lab_up(tmp_path / "a", 0, "etcd", out=said.append, control_planes=2)
    assert any("WARNING: 2 control planes" in s and "odd number" in s for s in said)
    assert not (tmp_path / "a").exists()  # nothing made before the missing binary was found


def test_haproxy_configuration(tmp_path: Path) -> None:
    lb = LoadBalancer(tmp_path, "127.0.10.250")
    text = lb.render({"lab-control-plane2": "127.0.10.3", "lab-control-plane": "127.0.10.1"})
    assert "    mode tcp" in text
    assert "    bind 127.0.10.250:6443" in text
    assert "    option httpchk GET /readyz" in text
    assert "check check-ssl verify none" in text
    servers = [line.split()[1:3] for line in text.splitlines() if line.strip().startswith("server ")]
    assert servers == [["lab-control-plane", "127.0.10.1:6443"], ["lab-control-plane2", "127.0.10.3:6443"]]
    assert f"stats socket {tmp_path / 'haproxy.sock'}" in text
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if Path(haproxy).exists():
        cfg = tmp_path / "check.cfg"
        cfg.write_text(text)
        res = subprocess.run([haproxy, "-c", "-q", "-f", str(cfg)], capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr


def test_the_lease_holder_is_the_node_that_acquired_it_last(tmp_path: Path) -> None:
    def log(node: str, component: str, lines: list[str]) -> None:
        d = tmp_path / node / f"var/log/pods/kube-system_{component}-{node}_uid/{component}"
        d.mkdir(parents=True)
        (d / "0.log").write_text("".join(f"{line}\n" for line in lines))

    nodes = [new_node(tmp_path, [], True)]
    nodes.append(new_node(tmp_path, nodes, True))
    save_registry(tmp_path, nodes)
    kcm = "kube-controller-manager"
    acquired = f"I pykubeadm.util.leaderelection] successfully acquired lease kube-system/{kcm}"
    log("lab-control-plane", kcm, [f"2026-11-25 14:55:47,810 {acquired}"])
    log("lab-control-plane2", kcm, ["2026-11-25 14:55:53,911 I attempting to acquire leader lease"])
    assert lease_holder_node(tmp_path, kcm) == "lab-control-plane"
    log("lab-control-plane2", "x", [])  # unrelated
    (tmp_path / f"lab-control-plane2/var/log/pods/kube-system_{kcm}-lab-control-plane2_uid/{kcm}/1.log").write_text(
        f"2026-11-25 14:56:30,994 {acquired}\n"
    )
    assert lease_holder_node(tmp_path, kcm) == "lab-control-plane2"
    assert lease_holder_node(tmp_path, "kube-scheduler") is None


def test_a_loopback_node_config_says_why_it_differs_from_kubeadms(tmp_path: Path) -> None:
    from pykubeadm.lab.nodes import LOOPBACK_CONFIG_NOTE, init_config, write_node_files
    from pykubeadm.util.yamlload import load_yaml_all

    cp = new_node(tmp_path, [], True)
    docs = init_config(cp, "abcdef.0123456789abcdef", "sqlite")
    write_node_files(cp, docs)
    text = cp.config_file.read_text()
    assert text.startswith(LOOPBACK_CONFIG_NOTE)
    assert all(line.startswith("# ") for line in LOOPBACK_CONFIG_NOTE.splitlines())
    assert "--bind-address" in LOOPBACK_CONFIG_NOTE and "--hostname-override" in LOOPBACK_CONFIG_NOTE
    assert list(load_yaml_all(text)) == docs  # a comment: kubeadm reads the same configuration
    cluster = docs[1]
    assert {"name": "bind-address", "value": cp.address} in cluster["scheduler"]["extraArgs"]


def test_a_netns_node_keeps_kubeadms_bind_addresses(tmp_path: Path) -> None:
    """A node with a network namespace of its own is configured as kubeadm configures a node: the controller-manager
    and scheduler keep --bind-address=127.0.0.1 (no extraArgs), the kubelet its default addresses, etcd its URLs."""
    from pykubeadm.lab.nodes import LOOPBACK_CONFIG_NOTE, init_config, write_node_files

    cp = new_node(tmp_path, [], True, netns=True)
    for datastore in ("sqlite", "etcd"):
        docs = init_config(cp, "abcdef.0123456789abcdef", datastore)
        cluster = docs[1]
        for component in ("controllerManager", "scheduler"):
            args = cluster.get(component, {}).get("extraArgs", [])
            assert not [a for a in args if a["name"] == "bind-address"], (component, args)
        assert "extraArgs" not in cluster.get("etcd", {}).get("local", {})
    write_node_files(cp, docs)
    assert not cp.config_file.read_text().startswith(LOOPBACK_CONFIG_NOTE.splitlines()[0])
    assert not (cp.patches_dir / "kubeletconfiguration+merge.yaml").exists()
