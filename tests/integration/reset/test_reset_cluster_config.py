"""`reset` reads the ClusterConfiguration from kube-system/kubeadm-config through --kubeconfig (a real apiserver)."""

from __future__ import annotations

from pathlib import Path

import yaml
from lightkube import codecs
from tests.conftest import run_pykubeadm

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import running_apiserver


def test_cluster_config_sets_cert_dir_and_etcd_data_dir(tmp_path: Path) -> None:
    cluster = {
        "apiVersion": "kubeadm.k8s.io/v1beta4",
        "kind": "ClusterConfiguration",
        "certificatesDir": "/srv/pki",
        "etcd": {"local": {"dataDir": "/data/etcd"}},
    }
    with running_apiserver(tmp_path / "api") as api:
        with sync_client(api.kubeconfig()) as client:
            client.create(
                codecs.from_dict(
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "kubeadm-config", "namespace": "kube-system"},
                        "data": {"ClusterConfiguration": yaml.safe_dump(cluster)},
                    }
                )
            )
        root = tmp_path / "node"
        (root / "etc/kubernetes/manifests").mkdir(parents=True)
        (root / "etc/kubernetes/manifests/etcd.yaml").write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "etcd", "namespace": "kube-system"},
                    "spec": {
                        "containers": [{"name": "etcd", "command": ["etcd", "--data-dir=/var/lib/etcd"]}],
                        "volumes": [{"name": "etcd-data", "hostPath": {"path": "/var/lib/etcd"}}],
                    },
                }
            )
        )
        res = run_pykubeadm("reset", "-f", "--dry-run", "--kubeconfig", "/admin.conf", root=root)
        assert res.returncode == 0, res.stderr  # /admin.conf under the root does not exist: defaults, silently
        assert "kubeadm-config" not in res.stdout
        (root / "admin.conf").write_text(api.kubeconfig().read_text())
        res = run_pykubeadm("reset", "-f", "--dry-run", "--kubeconfig", "/admin.conf", root=root)
    assert res.returncode == 0, res.stderr
    assert (
        '[reset] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...' in res.stdout
    )
    assert "Unable to fetch" not in res.stderr
    assert "No kubeadm config" not in res.stderr
    assert "[reset] Would delete contents of the etcd data directory: /data/etcd" in res.stdout
    assert "[reset] Would delete contents of directories: [/etc/kubernetes/manifests /srv/pki]" in res.stdout
    assert '[reset] WARNING: Cleaning a non-default certificates directory: "/srv/pki"' in res.stderr
