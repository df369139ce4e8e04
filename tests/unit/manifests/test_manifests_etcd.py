"""Local etcd static Pod against the fact sheet (§5.6, kubeadm 1.33 with etcd 3.5 flags) and kubeadm's probe rules."""

from __future__ import annotations

import pytest

from pykubeadm.manifests import Arg, ClusterInputs, LocalEtcdInputs, build_etcd_pod
from pykubeadm.manifests.etcd import etcd_command

ETCD_FLAGS = [
    "etcd",
    "--advertise-client-urls=https://192.168.0.10:2379",
    "--cert-file=/etc/kubernetes/pki/etcd/server.crt",
    "--client-cert-auth=true",
    "--data-dir=/var/lib/etcd",
    "--experimental-initial-corrupt-check=true",
    "--experimental-watch-progress-notify-interval=5s",
    "--initial-advertise-peer-urls=https://192.168.0.10:2380",
    "--initial-cluster=node1=https://192.168.0.10:2380",
    "--key-file=/etc/kubernetes/pki/etcd/server.key",
    "--listen-client-urls=https://127.0.0.1:2379,https://192.168.0.10:2379",
    "--listen-metrics-urls=http://127.0.0.1:2381",
    "--listen-peer-urls=https://192.168.0.10:2380",
    "--name=node1",
    "--peer-cert-file=/etc/kubernetes/pki/etcd/peer.crt",
    "--peer-client-cert-auth=true",
    "--peer-key-file=/etc/kubernetes/pki/etcd/peer.key",
    "--peer-trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt",
    "--snapshot-count=10000",
    "--trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt",
]


def inputs(**kw: object) -> ClusterInputs:
    base: dict[str, object] = {"advertise_address": "192.168.0.10", "node_name": "node1"}
    base.update(kw)
    return ClusterInputs(**base)  # type: ignore[arg-type]


def ctr(pod: dict) -> dict:
    return pod["spec"]["containers"][0]


def test_flags_image_resources_annotation() -> None:
    pod = build_etcd_pod(inputs())
    c = ctr(pod)
    assert c["command"] == ETCD_FLAGS
    assert c["image"] == "registry.k8s.io/etcd:3.5.21-0"
    assert c["resources"] == {"requests": {"cpu": "100m", "memory": "100Mi"}}
    assert pod["metadata"]["annotations"] == {
        "kubeadm.kubernetes.io/etcd.advertise-client-urls": "https://192.168.0.10:2379"
    }
    assert pod["metadata"]["labels"] == {"component": "etcd", "tier": "control-plane"}
    assert pod["spec"]["priorityClassName"] == "system-node-critical" and pod["spec"]["hostNetwork"] is True


@pytest.mark.parametrize(
    ("probe", "path", "timing"),
    [
        ("livenessProbe", "/livez", (10, 15, 8, 10)),
        ("readinessProbe", "/readyz", (None, 15, 3, 1)),
        ("startupProbe", "/readyz", (10, 15, 24, 10)),
    ],
)
def test_probes(probe: str, path: str, timing: tuple) -> None:
    p = ctr(build_etcd_pod(inputs()))[probe]
    assert p["httpGet"] == {"host": "127.0.0.1", "path": path, "port": 2381, "scheme": "HTTP"}
    assert (p.get("initialDelaySeconds"), p["timeoutSeconds"], p["failureThreshold"], p["periodSeconds"]) == timing


def test_volumes_read_write() -> None:
    pod = build_etcd_pod(inputs(local_etcd=LocalEtcdInputs(data_dir="/data/etcd")))
    assert pod["spec"]["volumes"] == [
        {"hostPath": {"path": "/etc/kubernetes/pki/etcd", "type": "DirectoryOrCreate"}, "name": "etcd-certs"},
        {"hostPath": {"path": "/data/etcd", "type": "DirectoryOrCreate"}, "name": "etcd-data"},
    ]
    # kubeadm v1.33's etcd.yaml: volumes sorted by name, but the container mounts etcd-data before etcd-certs
    assert ctr(pod)["volumeMounts"] == [
        {"mountPath": "/data/etcd", "name": "etcd-data"},
        {"mountPath": "/etc/kubernetes/pki/etcd", "name": "etcd-certs"},
    ]
    assert "--data-dir=/data/etcd" in ctr(pod)["command"]


def test_ipv6() -> None:
    cmd = etcd_command(inputs(advertise_address="fd00::10"))
    assert "--listen-client-urls=https://[::1]:2379,https://[fd00::10]:2379" in cmd
    assert "--listen-metrics-urls=http://[::1]:2381" in cmd
    assert "--initial-cluster=node1=https://[fd00::10]:2380" in cmd
    assert ctr(build_etcd_pod(inputs(advertise_address="fd00::10")))["livenessProbe"]["httpGet"]["host"] == "::1"


def test_user_metrics_url_moves_probes_and_extra_args_override() -> None:
    local = LocalEtcdInputs(
        extra_args=(
            Arg("listen-metrics-urls", "https://127.0.10.1:2382,http://127.0.0.1:2381"),
            Arg("snapshot-count", "5000"),
        ),
    )
    pod = build_etcd_pod(inputs(local_etcd=local))
    assert ctr(pod)["livenessProbe"]["httpGet"] == {
        "host": "127.0.10.1",
        "path": "/livez",
        "port": 2382,
        "scheme": "HTTPS",
    }
    cmd = ctr(pod)["command"]
    assert "--snapshot-count=5000" in cmd and "--snapshot-count=10000" not in cmd


def test_joining_member_and_image_override() -> None:
    cmd = etcd_command(inputs(), [("node0", "https://10.0.0.1:2380"), ("node1", "https://192.168.0.10:2380")])
    assert "--initial-cluster=node0=https://10.0.0.1:2380,node1=https://192.168.0.10:2380" in cmd
    assert "--initial-cluster-state=existing" in cmd
    pod = build_etcd_pod(inputs(local_etcd=LocalEtcdInputs(image_repository="my.reg", image_tag="3.5.9-0")))
    assert ctr(pod)["image"] == "my.reg/etcd:3.5.9-0"


def test_external_etcd_has_no_etcd_pod() -> None:
    with pytest.raises(ValueError, match="external etcd"):
        build_etcd_pod(inputs(local_etcd=None))
