"""pki.renewal, pki.csr and the check-expiration table: renew with the local CA, external CA, expiration rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509

from pykubeadm.cli.certs import _text_report
from pykubeadm.errors import CertError
from pykubeadm.kubeconfig import specs
from pykubeadm.kubeconfig.config import client_cert_and_key_pem, load_kubeconfig
from pykubeadm.kubeconfig.create import create_kubeconfig_file
from pykubeadm.pki import certlist
from pykubeadm.pki.create import create_ca_files, create_cert_files
from pykubeadm.pki.csr import create_csr_files, create_default_keys_and_csrs
from pykubeadm.pki.renewal import expiration_report, renew_handlers, renew_using_local_ca
from pykubeadm.util.humanize import short_human_duration
from pykubeadm.util.tabwriter import TabWriter

P = certlist.PkiParams(
    node_name="node1",
    advertise_address="192.168.0.10",
    encryption_algorithm="ECDSA-P256",
    apiserver_cert_sans=("extra.example.com",),
)
K = specs.KubeconfigParams(node_name="node1", advertise_address="192.168.0.10", encryption_algorithm="ECDSA-P256")


@pytest.fixture
def node(tmp_path: Path) -> tuple[Path, Path]:
    pki, kdir = tmp_path / "pki", tmp_path / "etc"
    start = datetime.now(UTC) - timedelta(days=30)
    for spec in certlist.CERT_LIST:
        if spec.is_ca:
            create_ca_files(spec, P, pki, lambda _l: None, start)
        else:
            create_cert_files(spec, P, pki, lambda _l: None, start)
    for s in specs.KUBECONFIG_LIST:
        create_kubeconfig_file(s, K, kdir, pki, lambda _l: None, start=start)
    return pki, kdir


def test_handlers_sorted_by_name(node: tuple[Path, Path]) -> None:
    pki, kdir = node
    assert [h.name for h in renew_handlers(pki, kdir)] == [
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
    assert "etcd-peer" not in [h.name for h in renew_handlers(pki, kdir, external_etcd=True)]


def test_renew_keeps_identity_and_changes_key_and_validity(node: tuple[Path, Path]) -> None:
    pki, kdir = node
    handlers = {h.name: h for h in renew_handlers(pki, kdir)}
    old = x509.load_pem_x509_certificate((pki / "apiserver.crt").read_bytes())
    old_key = (pki / "apiserver.key").read_bytes()
    start = datetime.now(UTC)
    assert renew_using_local_ca(handlers["apiserver"], pki, "ECDSA-P256", timedelta(hours=24), start)
    new = x509.load_pem_x509_certificate((pki / "apiserver.crt").read_bytes())
    assert new.subject == old.subject and new.issuer == old.issuer
    san = x509.SubjectAlternativeName
    assert new.extensions.get_extension_for_class(san).value == old.extensions.get_extension_for_class(san).value
    ext_ku = x509.ExtendedKeyUsage
    assert new.extensions.get_extension_for_class(ext_ku).value == old.extensions.get_extension_for_class(ext_ku).value
    assert (pki / "apiserver.key").read_bytes() != old_key
    assert new.not_valid_before_utc == (start - timedelta(minutes=5)).replace(microsecond=0)
    assert new.not_valid_after_utc == (start + timedelta(hours=24)).replace(microsecond=0)
    # a kubeconfig's embedded client certificate
    before = load_kubeconfig(kdir / "admin.conf")
    assert renew_using_local_ca(handlers["admin.conf"], pki, "ECDSA-P256", timedelta(hours=24), start)
    after = load_kubeconfig(kdir / "admin.conf")
    assert after["clusters"] == before["clusters"] and after["contexts"] == before["contexts"]
    cert = x509.load_pem_x509_certificate(client_cert_and_key_pem(after)[0])
    assert cert.subject.rfc4514_string() == "CN=kubernetes-admin,O=kubeadm:cluster-admins"
    assert cert.not_valid_after_utc == (start + timedelta(hours=24)).replace(microsecond=0)


def test_external_ca_is_not_renewed(node: tuple[Path, Path]) -> None:
    pki, kdir = node
    (pki / "front-proxy-ca.key").unlink()
    handlers = {h.name: h for h in renew_handlers(pki, kdir)}
    before = (pki / "front-proxy-client.crt").read_bytes()
    assert not renew_using_local_ca(handlers["front-proxy-client"], pki, "ECDSA-P256")
    assert (pki / "front-proxy-client.crt").read_bytes() == before
    certs, cas = expiration_report(pki, kdir)
    assert {e.name: e.externally_managed for e in cas} == {"ca": False, "etcd-ca": False, "front-proxy-ca": True}
    assert [e.externally_managed for e in certs if e.name == "front-proxy-client"] == [True]


def test_expiration_table_text(node: tuple[Path, Path]) -> None:
    pki, kdir = node
    (kdir / "super-admin.conf").unlink()
    certs, cas = expiration_report(pki, kdir)
    text = _text_report(certs, cas, datetime.now(UTC))
    lines = text.splitlines()
    # Go's tabwriter: the longest first cell ("!MISSING! super-admin.conf", 26) + padding 3 sets column 0
    widths = (29, 25, 16, 24)
    assert (
        lines[0]
        == "".join(
            h.ljust(w)
            for h, w in zip(("CERTIFICATE", "EXPIRES", "RESIDUAL TIME", "CERTIFICATE AUTHORITY"), widths, strict=True)
        )
        + "EXTERNALLY MANAGED"
    )
    assert lines[1].startswith("admin.conf".ljust(29))
    assert lines[1].endswith("334d".ljust(16) + "ca".ljust(24) + "no      ")
    assert lines[3].split()[-2:] == ["etcd-ca", "no"]
    assert lines[11] == "!MISSING! super-admin.conf".ljust(sum(widths))
    assert lines[12] == ""
    assert lines[13] == "CERTIFICATE AUTHORITY   EXPIRES                  RESIDUAL TIME   EXTERNALLY MANAGED"
    assert lines[14].startswith("ca                      ") and " 9y " in lines[14]


def test_short_human_duration() -> None:
    cases = {
        0: "0s",
        59: "59s",
        60: "1m",
        3599: "59m",
        3600: "1h",
        86400: "1d",
        364 * 86400: "364d",
        3650 * 86400: "10y",
        -1: "0s",
        -5: "<invalid>",
    }
    for seconds, want in cases.items():
        assert short_human_duration(timedelta(seconds=seconds)) == want


def test_tabwriter_blocks() -> None:
    tw = TabWriter(minwidth=10, tabwidth=4, padding=3)
    tw.write("a\tbb\tc\n")
    tw.write("longer-name\tx\ty\n\n")
    tw.write("h\ti\n")
    assert tw.flush() == "a             bb        c\nlonger-name   x         y\n\nh         i\n"


def test_generate_csr_files(tmp_path: Path) -> None:
    lines: list[str] = []
    create_default_keys_and_csrs(P, tmp_path, lines.append, "/etc/kubernetes/pki")
    assert lines == [
        "generating keys and CSRs in /etc/kubernetes/pki",
        "  apiserver",
        "  apiserver-kubelet-client",
        "  front-proxy-client",
        "  etcd/server",
        "  etcd/peer",
        "  etcd/healthcheck-client",
        "  apiserver-etcd-client",
    ]
    csr = x509.load_pem_x509_csr((tmp_path / "apiserver.csr").read_bytes())
    assert csr.subject.rfc4514_string() == "CN=kube-apiserver"
    dns = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert dns == sorted(
        [
            "node1",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "extra.example.com",
        ]
    )
    peer = x509.load_pem_x509_csr((tmp_path / "etcd/peer.csr").read_bytes())
    assert peer.subject.rfc4514_string() == "CN=node1"
    assert (tmp_path / "apiserver.csr").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "apiserver.key").read_text().startswith("-----BEGIN EC PRIVATE KEY-----")
    with pytest.raises(CertError, match=f"file already exists: key or CSR {tmp_path}/apiserver"):
        create_csr_files(certlist.APISERVER, P, tmp_path)
