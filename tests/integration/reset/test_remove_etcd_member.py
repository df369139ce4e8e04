"""reset phase `remove-etcd-member` against a real three-member etcd cluster (and an unreachable one)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from etcd3gw.client import Etcd3Client
from tests.conftest import run_pykubeadm

from pykubeadm.testing.etcd import EtcdCluster, etcd_available, free_port

pytestmark = pytest.mark.skipif(not etcd_available(), reason="needs the etcd binary")


def _write_manifest(root: Path, name: str, client_url: str, peer_url: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "etcd",
            "namespace": "kube-system",
            "annotations": {"kubeadm.kubernetes.io/etcd.advertise-client-urls": client_url},
        },
        "spec": {
            "containers": [
                {
                    "name": "etcd",
                    "image": "registry.k8s.io/etcd:3.5.21-0",
                    "command": [
                        "etcd",
                        f"--advertise-client-urls={client_url}",
                        "--data-dir=/var/lib/etcd",
                        f"--initial-advertise-peer-urls={peer_url}",
                        f"--name={name}",
                    ],
                    "volumeMounts": [{"mountPath": "/var/lib/etcd", "name": "etcd-data"}],
                }
            ],
            "volumes": [{"name": "etcd-data", "hostPath": {"path": "/var/lib/etcd", "type": "DirectoryOrCreate"}}],
        },
    }
    (root / "etc/kubernetes/manifests").mkdir(parents=True)
    (root / "etc/kubernetes/manifests/etcd.yaml").write_text(yaml.safe_dump(pod))
    (root / "var/lib/etcd/member/wal").mkdir(parents=True)
    (root / "var/lib/etcd/member/wal/0.wal").write_text("x")


def _members(url: str) -> list[dict]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return Etcd3Client(host=host, port=int(port), timeout=5).members()


def test_removes_this_nodes_member_when_others_exist(tmp_path: Path) -> None:
    with EtcdCluster(tmp_path / "etcd", size=3) as cluster:
        me = cluster.members[2]
        root = tmp_path / "node3"
        _write_manifest(root, me.name, me.client_url, me.peer_url)
        res = run_pykubeadm("reset", "phase", "remove-etcd-member", root=root)
        assert res.returncode == 0, res.stderr
        assert "Failed to remove etcd member" not in res.stderr
        assert "[reset] Deleted contents of the etcd data directory: /var/lib/etcd" in res.stdout
        assert list((root / "var/lib/etcd").iterdir()) == []
        left = _members(cluster.members[0].client_url)
        assert len(left) == 2
        assert me.peer_url not in {u for m in left for u in m.get("peerURLs", [])}


def test_unreachable_etcd_is_a_warning_and_the_data_dir_still_goes(tmp_path: Path) -> None:
    root = tmp_path / "node"
    _write_manifest(root, "node", f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}")
    res = run_pykubeadm("reset", "phase", "remove-etcd-member", root=root)
    assert res.returncode == 0, res.stderr
    assert "[reset] Failed to remove etcd member: failed to list etcd members:" in res.stderr
    assert "please manually remove this etcd member using etcdctl" in res.stderr
    assert "[reset] Deleted contents of the etcd data directory: /var/lib/etcd" in res.stdout
    assert not (root / "var/lib/etcd/member").exists()
