"""The metrics server's serving certificate: without --tls-cert-file it makes a self-signed pair in --cert-dir (in a
forked child), with kubeadm's modes, valid for localhost and the bound address, and reuses it on the next start."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509

from pykubeadm.metricsserver.server import ServerOptions, serving_context


def test_self_signed_pair_written_with_modes_and_reused(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    opts = ServerOptions(cert_dir=certs)
    serving_context(opts, "10.1.2.3")
    cert, key = certs / "apiserver.crt", certs / "apiserver.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(cert.stat().st_mode) == 0o644
    leaf = x509.load_pem_x509_certificates(cert.read_bytes())[0]
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert set(sans.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("10.1.2.3"),
    }
    before = cert.read_bytes()
    serving_context(opts, "10.1.2.3")
    assert cert.read_bytes() == before  # an existing pair is loaded, not replaced


def test_cert_dir_that_cannot_be_made_is_an_error_naming_the_files(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError, match=r"apiserver\.crt"):
        serving_context(ServerOptions(cert_dir=tmp_path / "file" / "certs"), "127.0.0.1")
