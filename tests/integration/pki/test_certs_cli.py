"""The certs and kubeconfig commands as a user runs them: `pykubeadm --root-dir <tmp> certs …`, `kubeconfig user`,
and a planted non-compliant apiserver.crt reported by name by `init phase certs`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from tests.conftest import run_pykubeadm

pytestmark = pytest.mark.integration

CONFIG = """apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 127.0.99.1
nodeRegistration:
  name: node1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.33.0
encryptionAlgorithm: ECDSA-P256
controlPlaneEndpoint: cp.example.com
"""


@pytest.fixture
def node(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    cfg = tmp_path / "kubeadm.yaml"
    cfg.write_text(CONFIG)
    run_pykubeadm("init", "phase", "certs", "all", "--config", str(cfg), root=root, check=True)
    run_pykubeadm("init", "phase", "kubeconfig", "all", "--config", str(cfg), root=root, check=True)
    return root, cfg


def test_check_expiration_table_and_json(node: tuple[Path, Path]) -> None:
    root, cfg = node
    res = run_pykubeadm("certs", "check-expiration", "--config", str(cfg), root=root, check=True)
    lines = res.stdout.splitlines()
    assert re.match(r"CERTIFICATE +EXPIRES +RESIDUAL TIME +CERTIFICATE AUTHORITY +EXTERNALLY MANAGED$", lines[0])
    names = [line.split()[0] for line in lines[1:12]]
    assert names == [
        "admin.conf",
        "apiserver",
        "apiserver-etcd-client",
        "apiserver-kubelet-client",
        "controller-manager.conf",
        "etcd-healthcheck-client",
        "etcd-peer",
        "etcd-server",
        "front-proxy-client",
        "scheduler.conf",
        "super-admin.conf",
    ]
    assert re.match(r"apiserver +\w{3} \d\d, \d{4} \d\d:\d\d UTC +36[45]d +ca +no {6}$", lines[2])
    assert lines[12] == ""
    assert [line.split()[0] for line in lines[14:17]] == ["ca", "etcd-ca", "front-proxy-ca"]
    assert re.search(r" (9y|10y) +no {6}$", lines[14])
    out = json.loads(
        run_pykubeadm("certs", "check-expiration", "--config", str(cfg), "-o", "json", root=root, check=True).stdout
    )
    assert out["kind"] == "CertificateExpirationInfo" and out["apiVersion"] == "output.kubeadm.k8s.io/v1alpha3"
    assert out["certificates"][1]["name"] == "apiserver" and out["certificates"][1]["caName"] == "ca"
    assert out["certificateAuthorities"][0]["residualTimeSeconds"] > 9 * 365 * 86400


def test_renew_all_and_one(node: tuple[Path, Path]) -> None:
    root, cfg = node
    pki = root / "etc/kubernetes/pki"
    before = {p.name: p.read_bytes() for p in pki.glob("*.crt")}
    res = run_pykubeadm("certs", "renew", "all", "--config", str(cfg), root=root, check=True)
    assert res.stdout.splitlines() == [
        "certificate embedded in the kubeconfig file for the admin to use and for kubeadm itself renewed",
        "certificate for serving the Kubernetes API renewed",
        "certificate the apiserver uses to access etcd renewed",
        "certificate for the API server to connect to kubelet renewed",
        "certificate embedded in the kubeconfig file for the controller manager to use renewed",
        "certificate for liveness probes to healthcheck etcd renewed",
        "certificate for etcd nodes to communicate with each other renewed",
        "certificate for serving etcd renewed",
        "certificate for the front proxy client renewed",
        "certificate embedded in the kubeconfig file for the scheduler manager to use renewed",
        "certificate embedded in the kubeconfig file for the super-admin renewed",
        "",
        "Done renewing certificates. You must restart the kube-apiserver, kube-controller-manager, kube-scheduler "
        "and etcd, so that they can use the new certificates.",
    ]
    after = {p.name: p.read_bytes() for p in pki.glob("*.crt")}
    assert after["ca.crt"] == before["ca.crt"] and after["front-proxy-ca.crt"] == before["front-proxy-ca.crt"]
    assert after["apiserver.crt"] != before["apiserver.crt"]
    subprocess.run(
        ["openssl", "verify", "-CAfile", str(pki / "ca.crt"), str(pki / "apiserver.crt")],
        check=True,
        capture_output=True,
    )
    (root / "etc/kubernetes/super-admin.conf").unlink()
    res = run_pykubeadm("certs", "renew", "all", "--config", str(cfg), root=root, check=True)
    assert "MISSING! certificate embedded in the kubeconfig file for the super-admin" in res.stdout
    one = run_pykubeadm("certs", "renew", "etcd-server", "--config", str(cfg), root=root, check=True)
    assert one.stdout == "certificate for serving etcd renewed\n"  # only `renew all` adds the closing advice
    (pki / "etcd/ca.key").unlink()
    ext = run_pykubeadm("certs", "renew", "etcd-peer", "--config", str(cfg), root=root, check=True)
    assert ext.stdout.startswith(
        "Detected external etcd/ca, certificate for etcd nodes to communicate with each other can't be renewed"
    )


def test_certificate_key() -> None:
    res = run_pykubeadm("certs", "certificate-key", check=True)
    assert re.fullmatch(r"[0-9a-f]{64}\n", res.stdout)
    assert res.stdout != run_pykubeadm("certs", "certificate-key", check=True).stdout


def test_generate_csr(tmp_path: Path) -> None:
    cfg = tmp_path / "kubeadm.yaml"
    cfg.write_text(CONFIG)
    root = tmp_path / "root"
    res = run_pykubeadm("certs", "generate-csr", "--config", str(cfg), root=root, check=True)
    assert res.stdout.startswith("generating keys and CSRs in /etc/kubernetes/pki\n  apiserver\n")
    assert "generating keys and CSRs in /etc/kubernetes\n  admin.conf\n" in res.stdout
    again = run_pykubeadm("certs", "generate-csr", "--config", str(cfg), root=root)
    assert again.returncode == 1 and "file already exists: key or CSR" in again.stderr
    pki = root / "etc/kubernetes/pki"
    for base in (
        "apiserver",
        "apiserver-kubelet-client",
        "front-proxy-client",
        "etcd/server",
        "etcd/peer",
        "etcd/healthcheck-client",
        "apiserver-etcd-client",
    ):
        assert (pki / f"{base}.key").stat().st_mode & 0o777 == 0o600
        out = subprocess.run(
            ["openssl", "req", "-in", str(pki / f"{base}.csr"), "-noout", "-verify"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert out.returncode == 0, out.stderr
    assert not (pki / "ca.key").exists()
    for name in ("admin.conf", "super-admin.conf", "kubelet.conf", "controller-manager.conf", "scheduler.conf"):
        assert (root / "etc/kubernetes" / f"{name}.csr").exists()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kubeconfig_user(node: tuple[Path, Path], tmp_path: Path) -> None:
    root, cfg = node
    res = run_pykubeadm(
        "kubeconfig",
        "user",
        "--client-name",
        "jane",
        "--org",
        "devs",
        "--validity-period",
        "2h",
        "--config",
        str(cfg),
        root=root,
        check=True,
    )
    path = tmp_path / "jane.conf"
    path.write_text(res.stdout)
    view = json.loads(
        subprocess.run(
            ["kubectl", "config", "view", "--kubeconfig", str(path), "--raw", "-o", "json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert view["clusters"][0]["cluster"]["server"] == "https://cp.example.com:6443"
    assert view["current-context"] == "jane@kubernetes"
    import base64

    cert = x509.load_pem_x509_certificate(base64.b64decode(view["users"][0]["user"]["client-certificate-data"]))
    assert cert.subject.rfc4514_string() == "CN=jane,O=devs"
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).total_seconds() > 7000
    missing = run_pykubeadm("kubeconfig", "user", "--config", str(cfg), root=root)
    assert missing.returncode != 0 and 'required flag(s) "client-name" not set' in missing.stderr
    assert not list(root.glob("**/jane*"))


def test_planted_non_compliant_apiserver_cert_is_reported(node: tuple[Path, Path], tmp_path: Path) -> None:
    root, cfg = node
    pki = root / "etc/kubernetes/pki"
    other = tmp_path / "other"
    run_pykubeadm("init", "phase", "certs", "all", "--config", str(cfg), root=other, check=True)
    for suffix in (".crt", ".key"):
        shutil.copy(other / "etc/kubernetes/pki" / f"apiserver{suffix}", pki / f"apiserver{suffix}")
    res = run_pykubeadm("init", "phase", "certs", "all", "--config", str(cfg), root=root)
    assert res.returncode == 1
    assert (
        "error execution phase certs/apiserver: [certs] certificate apiserver not signed by CA certificate ca: "
        "x509: certificate signed by unknown authority"
    ) in res.stderr


def test_without_config_the_cluster_is_asked_first(node: tuple[Path, Path]) -> None:
    """No --config and an admin.conf whose API server is down: kubeadm's two "Reading configuration" lines, the
    fallback line, then the table from the defaults."""
    root, _ = node
    res = run_pykubeadm("certs", "check-expiration", root=root, check=True)
    lines = res.stdout.splitlines()
    assert lines[:4] == [
        '[check-expiration] Reading configuration from the "kubeadm-config" ConfigMap in namespace "kube-system"...',
        "[check-expiration] Use 'kubeadm init phase upload-config --config your-config-file' to re-upload it.",
        "[check-expiration] Error reading configuration from the Cluster. Falling back to default configuration",
        "",
    ]
    assert lines[4].startswith("CERTIFICATE ")
    (root / "etc/kubernetes/admin.conf").unlink()
    quiet = run_pykubeadm("certs", "check-expiration", root=root, check=True)
    assert quiet.stdout.startswith("CERTIFICATE ")
    assert "!MISSING! admin.conf" in quiet.stdout
