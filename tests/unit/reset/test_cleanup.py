"""Reset's helpers: confinement to the node root, kubeadm's CleanDir, etcd manifest reading, process matching."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.phases.reset.cleanup import OutsideRootError, clean_dir, inside_root, remove_path
from pykubeadm.phases.reset.cleanup_node import builtin_state_paths, go_list
from pykubeadm.phases.reset.etcd_member import read_etcd_pod
from pykubeadm.phases.reset.processes import _matcher


def test_inside_root_refuses_escapes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    (root / "etc/link").symlink_to(tmp_path / "out")
    layout = Layout(root)
    assert inside_root(layout, "/etc") == root / "etc"
    for bad in ["/../out", "/etc/link", "/etc/../../out"]:
        with pytest.raises(OutsideRootError, match="outside the node's root directory"):
            inside_root(layout, bad)


def test_clean_dir_keeps_the_dir_and_does_not_follow_links(tmp_path: Path) -> None:
    root = tmp_path / "root"
    d = root / "etc/kubernetes/pki"
    (d / "etcd").mkdir(parents=True)
    (d / "ca.crt").write_text("x")
    (d / "etcd/ca.crt").write_text("x")
    (tmp_path / "out").mkdir()
    (tmp_path / "out/keep").write_text("keep")
    (d / "link").symlink_to(tmp_path / "out")
    layout = Layout(root)
    clean_dir(layout, "/etc/kubernetes/pki")
    assert d.is_dir() and list(d.iterdir()) == []
    assert (tmp_path / "out/keep").read_text() == "keep"
    clean_dir(layout, "/does/not/exist")  # missing is fine
    (root / "etc/kubernetes/admin.conf").symlink_to(tmp_path / "out/keep")
    remove_path(layout, "/etc/kubernetes/admin.conf")
    assert not (root / "etc/kubernetes/admin.conf").is_symlink()
    assert (tmp_path / "out/keep").exists()


def test_go_list() -> None:
    assert go_list(["/a", "/b"]) == "[/a /b]"
    assert go_list([]) == "[]"


def test_read_etcd_pod(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    assert read_etcd_pod(layout) is None
    layout.manifests_dir.mkdir(parents=True)
    pod = {
        "metadata": {"annotations": {"kubeadm.kubernetes.io/etcd.advertise-client-urls": "https://10.0.0.1:2379"}},
        "spec": {
            "containers": [
                {
                    "command": [
                        "etcd",
                        "--data-dir=/x",
                        "--name=n1",
                        "--initial-advertise-peer-urls=https://10.0.0.1:2380",
                    ]
                }
            ],
            "volumes": [{"name": "etcd-data", "hostPath": {"path": "/var/lib/etcd2"}}],
        },
    }
    layout.manifest("etcd").write_text(yaml.safe_dump(pod))
    got = read_etcd_pod(layout)
    assert got is not None
    assert (got.data_dir, got.name, got.client_urls, got.peer_urls) == (
        "/var/lib/etcd2",
        "n1",
        ("https://10.0.0.1:2379",),
        ("https://10.0.0.1:2380",),
    )
    del pod["spec"]["volumes"]
    layout.manifest("etcd").write_text(yaml.safe_dump(pod))
    assert read_etcd_pod(layout).data_dir == "/x"  # type: ignore[union-attr]
    layout.manifest("etcd").write_text("- not a pod")
    with pytest.raises(KubeadmError, match="invalid etcd pod manifest"):
        read_etcd_pod(layout)


def test_builtin_state_includes_the_sqlite_datastore_of_the_apiserver_manifest(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    layout.manifests_dir.mkdir(parents=True)
    pod = {
        "spec": {
            "containers": [
                {
                    "command": ["kube-apiserver", "--etcd-servers=sqlite:///state/db.sqlite?sync=full"],
                    "volumeMounts": [{"name": "state", "mountPath": "/state"}],
                }
            ],
            "volumes": [{"name": "state", "hostPath": {"path": "/var/lib/mystate"}}],
        }
    }
    layout.manifest("kube-apiserver").write_text(yaml.safe_dump(pod))
    paths = builtin_state_paths(layout)
    assert paths[:2] == ["/var/lib/mystate/db.sqlite", "/var/lib/mystate/db.sqlite-wal"]
    assert {"/var/lib/pykubeadm", "/var/run/pykubeadm", "/var/log/pykubeadm", "/var/log/pods"} <= set(paths)


@pytest.mark.parametrize(
    ("arg", "hit"),
    [
        (b"/n/root", True),
        (b"/n/root/var/lib/etcd", True),
        (b"--data-dir=/n/root/var/lib/etcd", True),
        (b"--etcd-servers=sqlite:///n/root/var/lib/pykubeadm/state.db", True),
        (b"--x=/a,/n/root/b", True),
        (b"/n/root2/var", False),
        (b"/x/n/root/var", False),
        (b"--data-dir=/n/rootx", False),
    ],
)
def test_process_argument_matching(arg: bytes, hit: bool) -> None:
    assert bool(_matcher("/n/root").search(arg)) is hit


def test_reset_finds_the_cri_endpoint_kubeadm_gave_the_kubelet(tmp_path: Path) -> None:
    """Without --cri-socket, reset removes the Pods of the runtime the node's kubelet was given (its instance config,
    else kubeadm-flags.env), and only a runtime whose socket is under a built-in node's root is the node's own."""
    from pykubeadm.phases.reset.cleanup_node import _node_cri_socket, _node_local_socket

    layout = Layout(tmp_path)
    assert _node_cri_socket(layout) == ""
    socket = f"unix://{tmp_path}/run/containerd/containerd.sock"
    layout.kubelet_env_file.parent.mkdir(parents=True)
    layout.kubelet_env_file.write_text(
        f'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint={socket} --node-ip=1.2.3.4"\n'
    )
    assert _node_cri_socket(layout) == socket
    layout.kubelet_instance_config.write_text(yaml.safe_dump({"containerRuntimeEndpoint": "unix:///x.sock"}))
    assert _node_cri_socket(layout) == "unix:///x.sock"
    assert not _node_local_socket(layout, socket)  # no such socket (yet)
    (tmp_path / "run/containerd").mkdir(parents=True)
    (tmp_path / "run/containerd/containerd.sock").touch()
    assert _node_local_socket(layout, socket)
    assert not _node_local_socket(layout, "unix:///var/run/containerd/containerd.sock")
