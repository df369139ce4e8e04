"""Reading static Pod manifests (hash = identity of a manifest's content) and a PodWorker's reported status."""

from __future__ import annotations

import yaml

from pykubeadm.kubelet.builtin.podworker import PodWorker
from pykubeadm.kubelet.server import subresource_for
from pykubeadm.kubelet.staticpods import read_static_pods
from pykubeadm.layout import Layout

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "etcd", "namespace": "kube-system"},
    "spec": {"containers": [{"name": "etcd", "image": "registry.k8s.io/etcd:3.5.21-0"}]},
}


def test_read_static_pods_hash_follows_content(tmp_path):
    (tmp_path / "etcd.yaml").write_text(yaml.safe_dump(POD))
    (tmp_path / ".swp").write_text("garbage")
    (tmp_path / "broken.yaml").write_text("kind: [")
    (tmp_path / "notapod.yaml").write_text(yaml.safe_dump({"kind": "ConfigMap", "metadata": {"name": "x"}}))
    nodefault = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"}, "spec": {"containers": []}}
    (tmp_path / "plain.json").write_text(yaml.safe_dump(nodefault))
    pods = read_static_pods(tmp_path, "n1")
    assert sorted(pods) == ["default/plain", "kube-system/etcd"]
    h1 = pods["kube-system/etcd"].hash
    assert h1 == read_static_pods(tmp_path, "n1")["kube-system/etcd"].hash
    assert h1 != read_static_pods(tmp_path, "n2")["kube-system/etcd"].hash  # node is part of the identity
    changed = dict(POD, spec={"containers": [{"name": "etcd", "image": "registry.k8s.io/etcd:3.6.4-0"}]})
    (tmp_path / "etcd.yaml").write_text(yaml.safe_dump(changed))
    assert read_static_pods(tmp_path, "n1")["kube-system/etcd"].hash != h1
    assert read_static_pods(tmp_path / "missing", "n1") == {}


def test_pod_worker_status_and_log_dir(tmp_path):
    w = PodWorker(POD, uid="abc", node_name="n1", pod_ip="127.0.10.1", layout=Layout(root=tmp_path))
    assert w.full_name == "etcd-n1"
    assert w.log_dir == tmp_path / "var/log/pods/kube-system_etcd-n1_abc"
    st = w.status()
    assert st["phase"] == "Pending" and st["hostIP"] == "127.0.10.1"
    [cs] = st["containerStatuses"]
    assert cs["name"] == "etcd" and cs["restartCount"] == 0 and not cs["ready"] and "waiting" in cs["state"]
    w.containers[0].state = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    w.containers[0].ready = True
    st = w.status()
    assert st["phase"] == "Running"
    assert {c["type"]: c["status"] for c in st["conditions"]}["Ready"] == "True"


def test_kubelet_api_subresources():
    assert subresource_for("/pods") == "proxy"
    assert subresource_for("/healthz") == "proxy"
    assert subresource_for("/stats/summary") == "stats"
    assert subresource_for("/metrics") == "metrics"
    assert subresource_for("/logs/") == "log"
    assert subresource_for("/spec/") == "spec"
