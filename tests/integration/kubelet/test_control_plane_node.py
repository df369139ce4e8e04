"""A control-plane node in built-in mode: the kubelet runs kube-apiserver from a kubeadm-shaped static Pod manifest.

Proves the manifest is load-bearing: flags with container paths reach the files under the node's root dir through the
hostPath volumes, the image tag is the version /version reports, HTTPS probes gate readiness, the kubelet registers
against the apiserver it runs (kubelet.conf with an embedded certificate, as `kubeadm init` writes it), the mirror Pod
shows the apiserver Running, and a new image tag (an upgrade) restarts the process with the new version.
"""

from __future__ import annotations

import base64
import ssl

import httpx
import pytest
import yaml
from tests.integration.kubelet.kubelet_procs import KubeletProcess
from tests.integration.kubelet.test_tls_bootstrap import _ready_node, eventually

from pykubeadm.kubelet.api import ClientConfig, KubeClient
from pykubeadm.testing.apiserver import free_port, generate_pki

pytestmark = pytest.mark.integration

IP = "127.0.10.41"


def apiserver_manifest(port: int, tag: str) -> dict:
    pki = "/etc/kubernetes/pki"
    flags = [
        f"--advertise-address={IP}",
        "--allow-privileged=true",
        "--authorization-mode=Node,RBAC",
        f"--bind-address={IP}",
        f"--client-ca-file={pki}/ca.crt",
        "--enable-admission-plugins=NodeRestriction",
        "--enable-bootstrap-token-auth=true",
        "--etcd-servers=sqlite:///var/lib/pykubeadm/state.db",
        f"--requestheader-client-ca-file={pki}/front-proxy-ca.crt",
        f"--secure-port={port}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki}/sa.pub",
        f"--service-account-signing-key-file={pki}/sa.key",
        "--service-cluster-ip-range=10.96.0.0/12",
        f"--tls-cert-file={pki}/apiserver.crt",
        f"--tls-private-key-file={pki}/apiserver.key",
    ]
    probe = {"host": IP, "port": port, "scheme": "HTTPS"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "kube-apiserver",
            "namespace": "kube-system",
            "labels": {"component": "kube-apiserver", "tier": "control-plane"},
        },
        "spec": {
            "hostNetwork": True,
            "priorityClassName": "system-node-critical",
            "containers": [
                {
                    "name": "kube-apiserver",
                    "image": f"registry.k8s.io/kube-apiserver:{tag}",
                    "command": ["kube-apiserver", *flags],
                    "livenessProbe": {
                        "httpGet": {**probe, "path": "/livez"},
                        "initialDelaySeconds": 10,
                        "periodSeconds": 10,
                        "failureThreshold": 8,
                        "timeoutSeconds": 15,
                    },
                    "readinessProbe": {
                        "httpGet": {**probe, "path": "/readyz"},
                        "periodSeconds": 1,
                        "failureThreshold": 3,
                        "timeoutSeconds": 15,
                    },
                    "startupProbe": {
                        "httpGet": {**probe, "path": "/livez"},
                        "periodSeconds": 1,
                        "failureThreshold": 60,
                        "timeoutSeconds": 15,
                    },
                    "volumeMounts": [
                        {"mountPath": "/etc/kubernetes/pki", "name": "k8s-certs", "readOnly": True},
                        {"mountPath": "/etc/ssl/certs", "name": "ca-certs", "readOnly": True},
                        {"mountPath": "/var/lib/pykubeadm", "name": "state"},
                    ],
                }
            ],
            "volumes": [
                {"name": "ca-certs", "hostPath": {"path": "/etc/ssl/certs", "type": "DirectoryOrCreate"}},
                {"name": "k8s-certs", "hostPath": {"path": "/etc/kubernetes/pki", "type": "DirectoryOrCreate"}},
                {"name": "state", "hostPath": {"path": "/var/lib/pykubeadm", "type": "DirectoryOrCreate"}},
            ],
        },
    }


async def test_kubelet_runs_the_apiserver_it_registers_with(tmp_path):
    root = tmp_path / "cp1"
    pki = generate_pki(root / "etc/kubernetes/pki", host=IP)
    port, kport, hport = free_port(IP), free_port(IP), free_port(IP)
    manifests = root / "etc/kubernetes/manifests"
    manifests.mkdir(parents=True)
    (manifests / "kube-apiserver.yaml").write_text(yaml.safe_dump(apiserver_manifest(port, "v1.33.3")))
    cert, key = pki.sign("system:node:cp1", ["system:nodes"], name="kubelet-client-initial")
    b64 = lambda p: base64.b64encode(p.read_bytes()).decode()  # noqa: E731
    (root / "etc/kubernetes/kubelet.conf").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "system:node:cp1@kubernetes",
                "clusters": [
                    {
                        "name": "kubernetes",
                        "cluster": {"server": f"https://{IP}:{port}", "certificate-authority-data": b64(pki.ca_cert)},
                    }
                ],
                "contexts": [
                    {
                        "name": "system:node:cp1@kubernetes",
                        "context": {"cluster": "kubernetes", "user": "system:node:cp1"},
                    }
                ],
                "users": [
                    {
                        "name": "system:node:cp1",
                        "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)},
                    }
                ],
            }
        )
    )
    (root / "var/lib/kubelet").mkdir(parents=True)
    (root / "var/lib/kubelet/config.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                "authentication": {
                    "anonymous": {"enabled": False},
                    "webhook": {"enabled": True},
                    "x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"},
                },
                "authorization": {"mode": "Webhook"},
                "rotateCertificates": True,
                "staticPodPath": "/etc/kubernetes/manifests",
                "healthzPort": hport,
                "port": kport,
            }
        )
    )
    kubelet = KubeletProcess(
        root,
        [
            "--kubeconfig=/etc/kubernetes/kubelet.conf",
            "--config=/var/lib/kubelet/config.yaml",
            f"--node-ip={IP}",
            "--hostname-override=cp1",
        ],
        tmp_path / "kubelet.log",
    ).start()
    admin = KubeClient(
        ClientConfig(
            server=f"https://{IP}:{port}",
            ca_pem=pki.ca_cert.read_bytes(),
            cert_pem=pki.admin_cert.read_bytes(),
            key_pem=pki.admin_key.read_bytes(),
        )
    )
    try:
        v = await eventually(lambda: admin.get("/version"), 60, "the apiserver started by the kubelet")
        assert v["gitVersion"] == "v1.33.3"  # the image tag
        assert (root / "var/lib/pykubeadm/state.db").exists()  # --etcd-servers path mapped through the volume
        await eventually(lambda: _ready_node(admin, "cp1"), 30, "Node cp1 Ready")

        async def mirror_ready():
            pod = await admin.get("/api/v1/namespaces/kube-system/pods/kube-apiserver-cp1")
            cs = ((pod.get("status") or {}).get("containerStatuses") or [{}])[0]
            return pod if cs.get("ready") else None

        pod = await eventually(mirror_ready, 30, "mirror pod kube-apiserver-cp1 ready")
        assert pod["spec"]["containers"][0]["image"] == "registry.k8s.io/kube-apiserver:v1.33.3"

        # the kubeadm-init certificate in kubelet.conf is replaced by a rotated one: a selfnodeclient CSR
        async def self_csr():
            csrs = (await admin.get("/apis/certificates.k8s.io/v1/certificatesigningrequests"))["items"]
            return [c for c in csrs if c["spec"].get("username") == "system:node:cp1"]

        [csr] = await eventually(self_csr, 20, "the rotation CSR authenticated with the kubeadm-init certificate")
        assert csr["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"

        # upgrade: a new image tag restarts the apiserver, which then reports the new version
        (manifests / "kube-apiserver.yaml").write_text(yaml.safe_dump(apiserver_manifest(port, "v1.33.4")))

        async def upgraded():
            return (await admin.get("/version"))["gitVersion"] == "v1.33.4"

        await eventually(upgraded, 60, "the upgraded apiserver")
        ctx = ssl.create_default_context()  # the kubelet's serving certificate is self-signed (kubelet.crt)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
        async with httpx.AsyncClient(verify=ctx) as cl:
            r = await cl.get(f"https://{IP}:{kport}/pods")
            assert r.status_code == 200
            assert [p["metadata"]["name"] for p in r.json()["items"]] == ["kube-apiserver-cp1"]
    finally:
        await admin.close()
        kubelet.stop()
