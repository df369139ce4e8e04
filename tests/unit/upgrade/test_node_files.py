"""What upgrade reads from the node's files: the node name (kubelet.conf's certificate), the API endpoint (the
kube-apiserver manifest's annotation), kubeconfigs whose file references are node paths, etcd's health URL."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from pykubeadm.errors import KubeadmError
from pykubeadm.layout import Layout
from pykubeadm.manifests import ClusterInputs, LocalEtcdInputs
from pykubeadm.phases.upgrade.cluster import kubeconfig_client, local_api_endpoint, node_name
from pykubeadm.phases.upgrade.staticpods import write_new_manifests
from pykubeadm.phases.upgrade.waiter import _etcd_check
from pykubeadm.pki.certs import CertConfig, encode_cert_pem, new_self_signed_ca
from pykubeadm.pki.keys import encode_private_key_pem, generate_private_key

INPUTS = ClusterInputs(advertise_address="127.0.30.1", node_name="cp1", bind_port=6444, local_etcd=LocalEtcdInputs())


def _kubelet_conf(layout: Layout, cn: str) -> None:
    key = generate_private_key("ECDSA-P256")
    cert = new_self_signed_ca(CertConfig(common_name=cn, encryption_algorithm="ECDSA-P256"), key)
    pem = layout.kubelet_client_current
    pem.parent.mkdir(parents=True)
    pem.write_bytes(encode_cert_pem(cert) + encode_private_key_pem(key))
    ca = layout.cert_path("ca")
    ca.parent.mkdir(parents=True)
    ca.write_bytes(encode_cert_pem(cert))
    conf = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {"server": "https://127.0.30.1:6443", "certificate-authority": "/etc/kubernetes/pki/ca.crt"},
            }
        ],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
        "users": [
            {
                "name": "u",
                "user": {
                    "client-certificate": layout.node_kubelet_client_current,
                    "client-key": layout.node_kubelet_client_current,
                },
            }
        ],
    }
    layout.kubelet_kubeconfig.write_text(yaml.safe_dump(conf))


def test_node_name_comes_from_kubelet_conf_under_the_root(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    layout.kubernetes_dir.mkdir(parents=True)
    _kubelet_conf(layout, "system:node:worker-7")
    assert node_name(layout) == "worker-7"
    client = kubeconfig_client(layout.kubelet_kubeconfig, layout)  # file references resolved under the root
    client.close()


def test_kubeconfig_with_a_missing_file_is_an_error(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    path = tmp_path / "kubelet.conf"
    path.write_text(yaml.safe_dump({"users": [{"name": "u", "user": {"client-certificate": "/nope.pem"}}]}))
    with pytest.raises(KubeadmError, match="couldn't create a Kubernetes client from file"):
        kubeconfig_client(path, layout)


def test_local_api_endpoint_from_the_manifest_annotation(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    write_new_manifests(layout.manifests_dir, INPUTS, ["kube-apiserver"], None)
    ep = local_api_endpoint(layout)
    assert (ep.advertise_address, ep.bind_port) == ("127.0.30.1", 6444)
    v6 = dataclasses.replace(INPUTS, advertise_address="fd00::1")
    write_new_manifests(layout.manifests_dir, v6, ["kube-apiserver"], None)
    assert local_api_endpoint(layout).advertise_address == "fd00::1"


def test_missing_manifest_is_reported(tmp_path: Path) -> None:
    with pytest.raises(KubeadmError, match="kube-apiserver manifest"):
        local_api_endpoint(Layout(tmp_path))


def test_etcd_health_url_follows_its_probe(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    write_new_manifests(layout.manifests_dir, INPUTS, ["etcd"], None)
    probe = yaml.safe_load(layout.manifest("etcd").read_text())["spec"]["containers"][0]["livenessProbe"]["httpGet"]
    check = _etcd_check(layout.manifest("etcd"))
    assert check is not None
    assert check.url == f"http://{probe['host']}:{probe['port']}{probe['path']}"
