"""pki.create and the init certs phase: generate, reuse, non-compliant files reported by name, external CA mode."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

import pytest

from pykubeadm.api import load_init_config
from pykubeadm.errors import CertError, PhaseError
from pykubeadm.layout import Layout
from pykubeadm.phases.init import certs as certs_phase
from pykubeadm.phases.init import kubeconfig as kubeconfig_phase
from pykubeadm.phases.init.data import InitData
from pykubeadm.pki import certlist
from pykubeadm.pki.certs import (
    AltNames,
    CertConfig,
    new_self_signed_ca,
    new_signed_cert,
    write_cert,
    write_cert_and_key,
)
from pykubeadm.pki.create import (
    create_ca_files,
    create_cert_files,
    create_service_account_key_files,
    using_external_ca,
    validate_certificate_with_config,
)
from pykubeadm.pki.keys import generate_private_key
from pykubeadm.workflow import Runner

PARAMS = certlist.PkiParams(node_name="node1", advertise_address="192.168.0.10", encryption_algorithm="ECDSA-P256")


def make_all(pki: Path, out: list[str]) -> None:
    for spec in certlist.CERT_LIST:
        if spec.is_ca:
            create_ca_files(spec, PARAMS, pki, out.append)
        else:
            create_cert_files(spec, PARAMS, pki, out.append)
    create_service_account_key_files(pki, PARAMS.encryption_algorithm, out.append)


def test_generate_then_reuse_everything(tmp_path: Path) -> None:
    first: list[str] = []
    make_all(tmp_path, first)
    assert first[0] == '[certs] Generating "ca" certificate and key'
    assert (
        "[certs] etcd/server serving cert is signed for DNS names [localhost node1] and IPs "
        "[192.168.0.10 127.0.0.1 ::1]" in first
    )
    snapshot = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert len(snapshot) == 22
    for p in snapshot:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o644 if p.suffix == ".crt" else 0o600), p
    second: list[str] = []
    make_all(tmp_path, second)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == snapshot
    assert second == [
        "[certs] Using existing ca certificate authority",
        "[certs] Using existing apiserver certificate and key on disk",
        "[certs] Using existing apiserver-kubelet-client certificate and key on disk",
        "[certs] Using existing front-proxy-ca certificate authority",
        "[certs] Using existing front-proxy-client certificate and key on disk",
        "[certs] Using existing etcd/ca certificate authority",
        "[certs] Using existing etcd/server certificate and key on disk",
        "[certs] Using existing etcd/peer certificate and key on disk",
        "[certs] Using existing etcd/healthcheck-client certificate and key on disk",
        "[certs] Using existing apiserver-etcd-client certificate and key on disk",
        '[certs] Using the existing "sa" key',
    ]


def test_apiserver_signed_by_another_ca_is_reported_by_name(tmp_path: Path) -> None:
    out: list[str] = []
    create_ca_files(certlist.CA, PARAMS, tmp_path, out.append)
    rogue_key = generate_private_key("ECDSA-P256")
    rogue_ca = new_self_signed_ca(CertConfig("kubernetes"), rogue_key)
    key = generate_private_key("ECDSA-P256")
    planted = new_signed_cert(CertConfig("kube-apiserver"), key.public_key(), rogue_ca, rogue_key)
    write_cert_and_key(tmp_path, "apiserver", planted, key)
    with pytest.raises(CertError) as err:
        create_cert_files(certlist.APISERVER, PARAMS, tmp_path, out.append)
    assert str(err.value) == (
        "[certs] certificate apiserver not signed by CA certificate ca: x509: certificate signed by unknown authority "
        '(possibly because of "x509: ECDSA verification failure" while trying to verify candidate authority '
        'certificate "kubernetes")'
    )
    rsa_key = generate_private_key("RSA-2048")
    rsa_ca = new_self_signed_ca(CertConfig("kubernetes"), rsa_key)
    write_cert_and_key(
        tmp_path, "apiserver", new_signed_cert(CertConfig("kube-apiserver"), key.public_key(), rsa_ca, rsa_key), key
    )
    with pytest.raises(
        CertError,
        match=r"signature algorithm specifies an RSA public key, but have public key of type \*ecdsa\.PublicKey",
    ):
        create_cert_files(certlist.APISERVER, PARAMS, tmp_path, out.append)


def test_missing_key_of_existing_cert_is_kept_like_kubeadm_but_bad_key_file_fails(tmp_path: Path) -> None:
    out: list[str] = []
    create_ca_files(certlist.CA, PARAMS, tmp_path, out.append)
    (tmp_path / "apiserver.key").write_text("not a key")
    with pytest.raises(
        CertError,
        match=r"failed to write or validate certificate \"apiserver\": failure loading apiserver key: couldn't load the private key file .*apiserver\.key",
    ):
        create_cert_files(certlist.APISERVER, PARAMS, tmp_path, out.append)


def test_wrong_sans_detected_by_config_validation(tmp_path: Path) -> None:
    ca_key = generate_private_key("ECDSA-P256")
    ca = new_self_signed_ca(CertConfig("kubernetes"), ca_key)
    key = generate_private_key("ECDSA-P256")
    cert = new_signed_cert(
        CertConfig("kube-apiserver", alt_names=AltNames(("kubernetes",), (ipaddress.ip_address("10.96.0.1"),))),
        key.public_key(),
        ca,
        ca_key,
    )
    from datetime import UTC, datetime

    cfg = certlist.cert_config(certlist.APISERVER, PARAMS, datetime.now(UTC))
    with pytest.raises(CertError) as err:
        validate_certificate_with_config(cert, "apiserver", cfg)
    assert str(err.value).startswith(
        "certificate apiserver is invalid: x509: certificate is valid for kubernetes, not "
    )


def test_ca_that_is_not_a_ca(tmp_path: Path) -> None:
    key = generate_private_key("ECDSA-P256")
    ca_key = generate_private_key("ECDSA-P256")
    ca = new_self_signed_ca(CertConfig("x"), ca_key)
    leaf = new_signed_cert(CertConfig("kubernetes"), key.public_key(), ca, ca_key)
    write_cert_and_key(tmp_path, "ca", leaf, key)
    out: list[str] = []
    create_ca_files(certlist.CA, PARAMS, tmp_path, out.append)  # kubeadm's phase only checks that it loads
    with pytest.raises(
        CertError, match="couldn't load CA certificate ca: ca certificate is not a certificate authority"
    ):
        create_cert_files(certlist.APISERVER, PARAMS, tmp_path, out.append)


def test_sa_key_that_does_not_load(tmp_path: Path) -> None:
    (tmp_path / "sa.key").write_text("junk")
    with pytest.raises(CertError, match=r"file sa.key existed but it could not be loaded properly"):
        create_service_account_key_files(tmp_path, "RSA-2048", print)


def _data(root: Path, **flags: object) -> InitData:
    cfg = load_init_config(
        None,
        {"apiserver-advertise-address": "192.168.0.10", "node-name": "node1", "kubernetes-version": "v1.33.0", **flags},
    )
    cfg.cluster.encryption_algorithm = "ECDSA-P256"
    layout = Layout(root, cfg.cluster.certificates_dir)
    out: list[str] = []
    return InitData(cfg=cfg, layout=layout, real_layout=layout, out=out.append)


def test_external_ca_mode(tmp_path: Path) -> None:
    data = _data(tmp_path)
    Runner([certs_phase.PHASE, kubeconfig_phase.PHASE], lambda: data).run()
    pki = tmp_path / "etc/kubernetes/pki"
    (pki / "ca.key").unlink()
    assert using_external_ca(pki) == (True, None)
    again = _data(tmp_path)
    lines: list[str] = []
    again.out = lines.append
    Runner([certs_phase.PHASE, kubeconfig_phase.PHASE], lambda: again).run()
    assert "[certs] Using existing ca keyless certificate authority" in lines
    assert "[certs] Using existing sa keys" in lines
    assert "[kubeconfig] External CA mode: Using user provided admin.conf" in lines
    # an external CA whose apiserver cert is missing is refused with kubeadm's message
    (pki / "apiserver.crt").unlink()
    broken = _data(tmp_path)
    with pytest.raises(
        PhaseError, match="invalid or incomplete external CA: failure loading certificate for API server"
    ):
        Runner([certs_phase.PHASE], lambda: broken).run()


def test_external_etcd_skips_etcd_certs(tmp_path: Path) -> None:
    data = _data(tmp_path)
    from pykubeadm.api.v1beta4 import Etcd, ExternalEtcd

    data.cfg.cluster.etcd = Etcd(external=ExternalEtcd(endpoints=["https://10.0.0.5:2379"]))
    lines: list[str] = []
    data.out = lines.append
    Runner([certs_phase.PHASE], lambda: data).run()
    assert "[certs] External etcd mode: Skipping etcd/ca certificate authority generation" in lines
    assert "[certs] External etcd mode: Skipping apiserver-etcd-client certificate generation" in lines
    assert not (tmp_path / "etc/kubernetes/pki/etcd").exists()


def test_phase_tree_declaration() -> None:
    children = [p.name for p in certs_phase.PHASE.children]
    assert children == [
        "all",
        "ca",
        "apiserver",
        "apiserver-kubelet-client",
        "front-proxy-ca",
        "front-proxy-client",
        "etcd-ca",
        "etcd-server",
        "etcd-peer",
        "etcd-healthcheck-client",
        "apiserver-etcd-client",
        "sa",
    ]
    apiserver = certs_phase.PHASE.children[2]
    assert apiserver.short == "Generate the certificate for serving the Kubernetes API"
    assert set(apiserver.inherit_flags) == {
        "cert-dir",
        "config",
        "kubernetes-version",
        "dry-run",
        "apiserver-advertise-address",
        "control-plane-endpoint",
        "apiserver-cert-extra-sans",
        "service-dns-domain",
        "service-cidr",
    }
    assert (
        "Default SANs are kubernetes, kubernetes.default, kubernetes.default.svc, "
        "kubernetes.default.svc.cluster.local, 10.96.0.1, 127.0.0.1" in apiserver.long
    )
    assert [p.name for p in kubeconfig_phase.PHASE.children] == [
        "all",
        "admin",
        "super-admin",
        "kubelet",
        "controller-manager",
        "scheduler",
    ]
    assert "node-name" in kubeconfig_phase.PHASE.children[3].inherit_flags


def test_dry_run_prints_the_dry_run_folder(tmp_path: Path) -> None:
    data = _data(tmp_path / "root")
    dry = Layout(tmp_path / "dry", data.cfg.cluster.certificates_dir)
    data.layout, data.dry_run = dry, True
    lines: list[str] = []
    data.out = lines.append
    Runner([certs_phase.PHASE], lambda: data).run()
    assert lines[0] == f'[certs] Using certificateDir folder "{tmp_path / "dry/etc/kubernetes/pki"}"'
    assert not (tmp_path / "root").exists()
    assert (tmp_path / "dry/etc/kubernetes/pki/ca.crt").exists()
    _ = write_cert  # exported helper kept in the public surface


def test_shared_certificates_exist(tmp_path: Path) -> None:
    from pykubeadm.pki.create import shared_certificates_exist

    with pytest.raises(CertError) as err:
        shared_certificates_exist(tmp_path)
    assert str(err.value).startswith("[failure loading certificate for CA: couldn't load the certificate file")
    make_all(tmp_path, [])
    shared_certificates_exist(tmp_path)
    (tmp_path / "ca.key").unlink()
    shared_certificates_exist(tmp_path)  # external CA: only a warning
    (tmp_path / "sa.pub").unlink()
    with pytest.raises(CertError, match=r"^failure loading key for service account"):
        shared_certificates_exist(tmp_path)
