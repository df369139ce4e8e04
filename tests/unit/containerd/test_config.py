"""A node's containerd config: everything under the node root, the CRI plugin set as this machine needs it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pykubeadm.containerd.config import (
    ContainerdConfig,
    kubeadm_pause_image,
    render_config,
    write_config,
    write_registry_hosts,
)
from pykubeadm.layout import Layout

CRI = "io.containerd.grpc.v1.cri"


def _render(root: Path, **kw: object) -> dict:
    return tomllib.loads(render_config(ContainerdConfig(Layout(root), **kw)))  # type: ignore[arg-type]


def test_every_path_is_under_the_node_root(short_tmp_path: Path) -> None:
    doc = _render(short_tmp_path / "n1")
    assert doc["version"] == 2
    assert doc["root"] == f"{short_tmp_path}/n1/var/lib/containerd"
    assert doc["state"] == f"{short_tmp_path}/n1/run/containerd"
    assert doc["grpc"]["address"] == f"{short_tmp_path}/n1/run/containerd/containerd.sock"
    assert doc["ttrpc"]["address"].startswith(f"{short_tmp_path}/n1/run/containerd/")
    assert doc["plugins"]["io.containerd.internal.v1.opt"]["path"] == f"{short_tmp_path}/n1/opt/containerd"
    cri = doc["plugins"][CRI]
    assert cri["cni"] == {"bin_dir": "/usr/lib/cni", "conf_dir": f"{short_tmp_path}/n1/etc/cni/net.d"}
    assert cri["registry"]["config_path"] == f"{short_tmp_path}/n1/etc/containerd/certs.d"
    assert cri["containerd"]["runtimes"]["runc"]["options"]["Root"] == f"{short_tmp_path}/n1/run/containerd/runc"
    assert cri["netns_mounts_under_state_dir"] is True


def test_the_cri_plugin_runs_runc_on_cgroupfs_overlayfs_and_kubeadms_pause(tmp_path: Path) -> None:
    cri = _render(tmp_path)["plugins"][CRI]
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.10" == kubeadm_pause_image()
    assert cri["containerd"]["snapshotter"] == "overlayfs"
    runc = cri["containerd"]["runtimes"]["runc"]
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["options"]["SystemdCgroup"] is False
    assert (cri["stream_server_address"], cri["stream_server_port"]) == ("127.0.0.1", "0")


def test_restrict_oom_score_adj_follows_the_setting(tmp_path: Path) -> None:
    assert _render(tmp_path, restrict_oom_score_adj=True)["plugins"][CRI]["restrict_oom_score_adj"] is True
    assert _render(tmp_path, restrict_oom_score_adj=False)["plugins"][CRI]["restrict_oom_score_adj"] is False


def test_a_custom_image_repository_moves_the_sandbox_image(tmp_path: Path) -> None:
    image = kubeadm_pause_image("localhost:5001")
    assert image == "localhost:5001/pause:3.10"
    assert _render(tmp_path, sandbox_image=image)["plugins"][CRI]["sandbox_image"] == image


def test_write_config_makes_the_directories_it_names(short_tmp_path: Path) -> None:
    cfg = ContainerdConfig(Layout(short_tmp_path), restrict_oom_score_adj=True)
    path = write_config(cfg)
    assert path == short_tmp_path / "etc/containerd/config.toml"
    assert tomllib.loads(path.read_text())["version"] == 2
    for d in ("var/lib/containerd", "run/containerd", "opt/containerd", "etc/containerd/certs.d", "etc/cni/net.d"):
        assert (short_tmp_path / d).is_dir(), d
    assert cfg.endpoint == f"unix://{short_tmp_path}/run/containerd/containerd.sock"


def test_a_registry_host_gets_its_hosts_toml_under_config_path(tmp_path: Path) -> None:
    path = write_registry_hosts(Layout(tmp_path), "localhost:5001", "http://127.0.0.1:5001")
    assert path == tmp_path / "etc/containerd/certs.d/localhost:5001/hosts.toml"
    assert tomllib.loads(path.read_text()) == {
        "server": "http://127.0.0.1:5001",
        "host": {"http://127.0.0.1:5001": {"capabilities": ["pull", "resolve"]}},
    }


def test_plugins_a_node_never_uses_are_not_loaded(tmp_path: Path) -> None:
    disabled = _render(tmp_path)["disabled_plugins"]
    assert "io.containerd.snapshotter.v1.btrfs" in disabled and "io.containerd.snapshotter.v1.zfs" in disabled
    assert not [p for p in disabled if "overlayfs" in p or p == CRI or "runc" in p]
