"""kubeconfig: document shape and key order, endpoints, the per-file table, existing-file checks, `kubeconfig user`."""

from __future__ import annotations

import base64
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykubeadm.errors import KubeconfigError, ValidationError
from pykubeadm.kubeconfig import specs
from pykubeadm.kubeconfig.config import (
    client_cert_and_key_pem,
    create_with_cert_files,
    create_with_token,
    current_cluster,
    dump_kubeconfig,
    load_kubeconfig,
)
from pykubeadm.kubeconfig.create import create_kubeconfig_file, user_kubeconfig, validate_kubeconfigs_for_external_ca
from pykubeadm.kubeconfig.csr import create_kubeconfigs_and_csrs
from pykubeadm.pki import certlist
from pykubeadm.pki.create import create_ca_files

PARAMS = specs.KubeconfigParams(node_name="node1", advertise_address="192.168.0.10", encryption_algorithm="ECDSA-P256")


@pytest.fixture
def pki(tmp_path: Path) -> Path:
    d = tmp_path / "pki"
    create_ca_files(
        certlist.CA, certlist.PkiParams("node1", "192.168.0.10", encryption_algorithm="ECDSA-P256"), d, lambda _l: None
    )
    return d


def test_endpoints() -> None:
    assert specs.local_api_endpoint_url("192.168.0.10", 6443) == "https://192.168.0.10:6443"
    assert specs.local_api_endpoint_url("fd00::1", 6443) == "https://[fd00::1]:6443"
    assert specs.control_plane_endpoint_url("", "10.0.0.1", 6443) == "https://10.0.0.1:6443"
    assert specs.control_plane_endpoint_url("lb.example.com", "10.0.0.1", 6444) == "https://lb.example.com:6444"
    assert specs.control_plane_endpoint_url("lb.example.com:443", "10.0.0.1", 6443) == "https://lb.example.com:443"
    assert specs.control_plane_endpoint_url("[fd00::9]:6443", "10.0.0.1", 6443) == "https://[fd00::9]:6443"
    assert specs.control_plane_endpoint_url("fd00::9", "10.0.0.1", 6443) == "https://[fd00::9]:6443"
    with pytest.raises(ValidationError, match=r"invalid value `bad` given for api.advertiseAddress"):
        specs.local_api_endpoint_url("bad", 6443)
    with pytest.raises(ValidationError, match='invalid value "a:0" given for controlPlaneEndpoint'):
        specs.control_plane_endpoint_url("a:0", "10.0.0.1", 6443)


def test_servers_per_file() -> None:
    p = specs.KubeconfigParams(node_name="n", advertise_address="10.0.0.1", control_plane_endpoint="lb:7443")
    got = {s.file_name: specs.server_for(s, p) for s in specs.KUBECONFIG_LIST}
    assert got == {
        "admin.conf": "https://lb:7443",
        "super-admin.conf": "https://lb:7443",
        "kubelet.conf": "https://10.0.0.1:6443",
        "controller-manager.conf": "https://10.0.0.1:6443",
        "scheduler.conf": "https://10.0.0.1:6443",
    }
    no_local = specs.KubeconfigParams(
        node_name="n", advertise_address="10.0.0.1", control_plane_endpoint="lb:7443", kubelet_local_mode=False
    )
    assert specs.server_for(specs.KUBELET, no_local) == "https://lb:7443"
    assert specs.client_name(specs.KUBELET, "node1") == "system:node:node1"


def test_written_file_shape_and_client_cert(tmp_path: Path, pki: Path) -> None:
    start = datetime(2026, 3, 1, tzinfo=UTC)
    lines: list[str] = []
    create_kubeconfig_file(specs.ADMIN, PARAMS, tmp_path / "k", pki, lines.append, start=start)
    path = tmp_path / "k/admin.conf"
    assert lines == ['[kubeconfig] Writing "admin.conf" kubeconfig file']
    assert path.stat().st_mode & 0o777 == 0o600
    text = path.read_text()
    # client-go's key order and layout
    top = [line.split(":")[0] for line in text.splitlines() if line and not line.startswith((" ", "-"))]
    assert top == ["apiVersion", "clusters", "contexts", "current-context", "kind", "preferences", "users"]
    assert "preferences: {}\n" in text
    assert "- cluster:\n    certificate-authority-data: " in text
    assert "\n    server: https://192.168.0.10:6443\n  name: kubernetes\n" in text
    assert (
        "- context:\n    cluster: kubernetes\n    user: kubernetes-admin\n  name: kubernetes-admin@kubernetes\n" in text
    )
    assert "- name: kubernetes-admin\n  user:\n    client-certificate-data: " in text
    cfg = load_kubeconfig(path)
    _, _, ca_pem = current_cluster(cfg)
    assert ca_pem == (pki / "ca.crt").read_bytes()
    cert_pem, key_pem = client_cert_and_key_pem(cfg)
    assert key_pem.startswith(b"-----BEGIN EC PRIVATE KEY-----")
    cert = x509.load_pem_x509_certificate(cert_pem)
    ca = x509.load_pem_x509_certificate(ca_pem)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kubernetes-admin"
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "kubeadm:cluster-admins"
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
    assert cert.not_valid_before_utc == ca.not_valid_before_utc
    assert cert.not_valid_after_utc == start + timedelta(hours=8760)
    cert.verify_directly_issued_by(ca)


def test_existing_file_checks(tmp_path: Path, pki: Path, caplog: pytest.LogCaptureFixture) -> None:
    kdir = tmp_path / "k"
    create_kubeconfig_file(specs.SCHEDULER, PARAMS, kdir, pki, lambda _l: None)
    before = (kdir / "scheduler.conf").read_bytes()
    lines: list[str] = []
    create_kubeconfig_file(specs.SCHEDULER, PARAMS, kdir, pki, lines.append)
    assert lines == ['[kubeconfig] Using existing kubeconfig file: "/etc/kubernetes/scheduler.conf"']
    assert (kdir / "scheduler.conf").read_bytes() == before
    moved = specs.KubeconfigParams(
        node_name="node1", advertise_address="192.168.0.99", encryption_algorithm="ECDSA-P256"
    )
    with caplog.at_level(logging.WARNING):
        create_kubeconfig_file(specs.SCHEDULER, moved, kdir, pki, lines.append)
    assert (
        'a kubeconfig file "/etc/kubernetes/scheduler.conf" exists already but has an unexpected API Server URL: '
        "expected: https://192.168.0.99:6443, got: https://192.168.0.10:6443"
    ) in caplog.text
    other = tmp_path / "other-pki"
    create_ca_files(
        certlist.CA, certlist.PkiParams("n", "10.0.0.1", encryption_algorithm="ECDSA-P256"), other, lambda _l: None
    )
    with pytest.raises(
        KubeconfigError,
        match=r'a kubeconfig file "/etc/kubernetes/scheduler.conf" exists already but has got the wrong CA cert',
    ):
        create_kubeconfig_file(specs.SCHEDULER, PARAMS, kdir, other, lambda _l: None)


def test_missing_ca(tmp_path: Path) -> None:
    with pytest.raises(
        KubeconfigError,
        match="couldn't create a kubeconfig; the CA files couldn't be loaded: couldn't load the certificate file",
    ):
        create_kubeconfig_file(specs.ADMIN, PARAMS, tmp_path, tmp_path / "pki", lambda _l: None)


def test_token_and_cert_file_builders() -> None:
    tok = yaml.safe_load(
        dump_kubeconfig(
            create_with_token(
                "https://10.0.0.1:6443", "kubernetes", "tls-bootstrap-token-user", b"CA", "abcdef.0123456789abcdef"
            )
        )
    )
    assert tok["users"] == [{"name": "tls-bootstrap-token-user", "user": {"token": "abcdef.0123456789abcdef"}}]
    assert tok["current-context"] == "tls-bootstrap-token-user@kubernetes"
    files = yaml.safe_load(
        dump_kubeconfig(
            create_with_cert_files(
                "https://10.0.0.1:6443",
                "kubernetes",
                "system:node:n1",
                b"CA",
                "/var/lib/kubelet/pki/kubelet-client-current.pem",
                "/var/lib/kubelet/pki/kubelet-client-current.pem",
            )
        )
    )
    assert files["users"][0]["user"] == {
        "client-certificate": "/var/lib/kubelet/pki/kubelet-client-current.pem",
        "client-key": "/var/lib/kubelet/pki/kubelet-client-current.pem",
    }
    assert base64.b64decode(files["clusters"][0]["cluster"]["certificate-authority-data"]) == b"CA"


def test_user_kubeconfig(pki: Path) -> None:
    p = specs.KubeconfigParams(
        node_name="n", advertise_address="10.0.0.1", control_plane_endpoint="lb.example.com:6443"
    )
    text = user_kubeconfig("jane", ["devs", "ops"], p, pki, validity_period=timedelta(hours=2))
    cfg = yaml.safe_load(text)
    assert cfg["clusters"][0]["cluster"]["server"] == "https://lb.example.com:6443"
    assert cfg["current-context"] == "jane@kubernetes"
    cert = x509.load_pem_x509_certificate(base64.b64decode(cfg["users"][0]["user"]["client-certificate-data"]))
    # one multi-valued RDN, DER SET OF order (shorter encoding first), as Go's encoding/asn1 sorts it
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["ops", "devs"]
    assert abs(cert.not_valid_after_utc - (datetime.now(UTC) + timedelta(hours=2))) < timedelta(minutes=1)
    token = yaml.safe_load(user_kubeconfig("bot", [], p, pki, token="abcdef.0123456789abcdef"))
    assert token["users"][0]["user"] == {"token": "abcdef.0123456789abcdef"}


def test_external_ca_validation(tmp_path: Path, pki: Path) -> None:
    kdir = tmp_path / "k"
    with pytest.raises(KubeconfigError, match=r"the controller-manager.conf file does not exists or it is not valid"):
        validate_kubeconfigs_for_external_ca(kdir, pki, PARAMS)
    for s in specs.KUBECONFIG_LIST:
        create_kubeconfig_file(s, PARAMS, kdir, pki, lambda _l: None)
    validate_kubeconfigs_for_external_ca(kdir, pki, PARAMS)


def test_kubeconfig_csrs(tmp_path: Path) -> None:
    lines: list[str] = []
    create_kubeconfigs_and_csrs(PARAMS, tmp_path, lines.append)
    assert lines[0] == "generating keys and CSRs in /etc/kubernetes"
    for s in specs.KUBECONFIG_LIST:
        cfg = load_kubeconfig(tmp_path / s.file_name)
        assert set(cfg["users"][0]["user"]) == {"client-key-data"}
        csr = x509.load_pem_x509_csr((tmp_path / f"{s.file_name}.csr").read_bytes())
        assert csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == specs.client_name(s, "node1")
        assert (tmp_path / f"{s.file_name}.csr").stat().st_mode & 0o777 == 0o600
    with pytest.raises(KubeconfigError, match=r"admin.conf: kubeconf file already exists"):
        create_kubeconfigs_and_csrs(PARAMS, tmp_path, lines.append)


def test_use_client_cert_files(tmp_path: Path, pki: Path) -> None:
    from pykubeadm.kubeconfig.config import use_client_cert_files, write_kubeconfig

    create_kubeconfig_file(specs.KUBELET, PARAMS, tmp_path, pki, lambda _l: None)
    cfg = load_kubeconfig(tmp_path / "kubelet.conf")
    pem = "/var/lib/kubelet/pki/kubelet-client-current.pem"
    write_kubeconfig(tmp_path / "kubelet.conf", use_client_cert_files(cfg, pem, pem))
    text = (tmp_path / "kubelet.conf").read_text()
    assert f"    client-certificate: {pem}\n    client-key: {pem}\n" in text
    assert "client-certificate-data" not in text and "certificate-authority-data" in text
