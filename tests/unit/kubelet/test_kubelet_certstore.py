"""The kubelet's certificate files: timestamped pairs, the -current symlink swap, the self-signed serving pair."""

from __future__ import annotations

import os
import stat
import subprocess
import time

from cryptography import x509
from cryptography.x509.oid import NameOID

from pykubeadm.kubelet import csr
from pykubeadm.kubelet.certstore import PairStore, ensure_self_signed_serving


def _issue(ca, node="n"):
    key = csr.generate_key()
    return ca.sign_csr(csr.create_csr_pem(key, csr.client_template(node))), key


def test_update_writes_timestamped_file_and_current_symlink(tmp_path, tiny_ca):
    store = PairStore(tmp_path / "pki", "kubelet-client")
    assert store.current() is None
    cert_pem, key = _issue(tiny_ca)
    now = time.time()
    pair = store.update(cert_pem, key, now=now)
    expected = tmp_path / "pki" / time.strftime("kubelet-client-%Y-%m-%d-%H-%M-%S.pem", time.localtime(now))
    assert pair.path == expected and expected.exists()
    assert stat.S_IMODE(expected.stat().st_mode) == 0o600
    current = tmp_path / "pki" / "kubelet-client-current.pem"
    assert current.is_symlink() and os.readlink(current) == str(expected.absolute())
    body = expected.read_text()
    assert body.index("BEGIN CERTIFICATE") < body.index("BEGIN EC PRIVATE KEY")
    loaded = store.current()
    assert loaded is not None and loaded.leaf == pair.leaf
    # a second certificate switches the link; the old file stays
    cert2, key2 = _issue(tiny_ca)
    pair2 = store.update(cert2, key2, now=now + 5)
    assert os.readlink(current) == str(pair2.path.absolute()) and expected.exists()
    assert store.current().leaf.serial_number == pair2.leaf.serial_number
    assert not (tmp_path / "pki" / "kubelet-client-updated.pem").exists()


def test_openssl_reads_current_pem(tmp_path, tiny_ca):
    store = PairStore(tmp_path, "kubelet-client")
    cert_pem, key = _issue(tiny_ca, "node-7")
    store.update(cert_pem, key)
    out = subprocess.run(
        ["openssl", "x509", "-in", str(store.current_path), "-noout", "-subject"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "system:node:node-7" in out and "system:nodes" in out


def test_updated_link_is_recovered(tmp_path, tiny_ca):
    store = PairStore(tmp_path, "kubelet-client")
    pair = store.update(*_issue(tiny_ca))
    os.replace(store.current_path, store.updated_path)  # crash between unlink and rename
    assert store.current() is not None and store.current_path.is_symlink()
    assert store.current().leaf == pair.leaf


def test_fallback_to_explicit_and_legacy_files(tmp_path, tiny_ca):
    cert_pem, key = _issue(tiny_ca)
    (tmp_path / "kubelet-client.crt").write_bytes(cert_pem)
    (tmp_path / "kubelet-client.key").write_bytes(csr.key_pem(key))
    assert PairStore(tmp_path, "kubelet-client").current() is not None


def test_self_signed_serving_pair(tmp_path):
    cert, key = tmp_path / "kubelet.crt", tmp_path / "kubelet.key"
    pair = ensure_self_signed_serving(cert, key, "node-a")
    assert len(pair.certs) == 2  # leaf followed by the throw-away CA
    leaf, ca = pair.certs
    assert leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value.startswith("node-a@")
    assert ca.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value.startswith("node-a-ca@")
    assert leaf.serial_number == 2 and ca.serial_number == 1
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["node-a"]
    assert key.read_text().startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    subprocess.run(["openssl", "verify", "-CAfile", str(cert), str(cert)], check=True, capture_output=True)
    again = ensure_self_signed_serving(cert, key, "node-a")  # reused, not regenerated
    assert again.leaf == leaf
    ip_pair = ensure_self_signed_serving(tmp_path / "b.crt", tmp_path / "b.key", "127.0.10.3")
    ip_san = ip_pair.leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(i) for i in ip_san.get_values_for_type(x509.IPAddress)] == ["127.0.10.3"]
