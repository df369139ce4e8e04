"""The kubelet's certificate files: rotating pair stores (`kubelet-client-*.pem`, `kubelet-server-*.pem`) and the
self-signed serving pair (`kubelet.crt`/`kubelet.key`).

Layout as client-go's `certificate.FileStore`: each issued certificate goes to `<dir>/<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem`
(local time, mode 0600; certificate blocks then the key block); `<prefix>-current.pem` is a symlink to its absolute
path, switched atomically through `<prefix>-updated.pem`. Used by the certificate manager and the kubelet server.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykubeadm import constants as c
from pykubeadm.kubelet.csr import key_pem
from pykubeadm.util.fs import ensure_dir, write_file_atomic

__all__ = ["CertPair", "PairStore", "ensure_self_signed_serving", "load_pair"]


@dataclass(frozen=True)
class CertPair:
    """A loaded certificate chain (leaf first) and its key; `path` is the file it came from."""

    path: Path
    certs: tuple[x509.Certificate, ...]
    key: Any

    @property
    def leaf(self) -> x509.Certificate:
        return self.certs[0]

    @property
    def not_before(self) -> dt.datetime:
        return self.leaf.not_valid_before_utc

    @property
    def not_after(self) -> dt.datetime:
        return self.leaf.not_valid_after_utc


def load_pair(cert_path: Path, key_path: Path | None = None) -> CertPair:
    """Load a certificate chain and key from one combined PEM file or a cert file plus a key file."""
    data = cert_path.read_bytes()
    certs = tuple(x509.load_pem_x509_certificates(data))
    key = serialization.load_pem_private_key((key_path or cert_path).read_bytes(), password=None)
    return CertPair(cert_path, certs, key)


class PairStore:
    """A rotating certificate store in `cert_dir` for `prefix` (`kubelet-client` or `kubelet-server`)."""

    def __init__(
        self,
        cert_dir: Path,
        prefix: str,
        *,
        cert_file: Path | None = None,
        key_file: Path | None = None,
    ):
        self.cert_dir = cert_dir
        self.prefix = prefix
        self.cert_file = cert_file
        self.key_file = key_file

    @property
    def current_path(self) -> Path:
        return self.cert_dir / f"{self.prefix}-current.pem"

    @property
    def updated_path(self) -> Path:
        return self.cert_dir / f"{self.prefix}-updated.pem"

    def current(self) -> CertPair | None:
        """The current pair: `-current.pem`, then the explicit files, then `<prefix>.crt`+`.key`; None if there is none."""
        if not self.current_path.exists() and self.updated_path.is_symlink():
            with contextlib.suppress(OSError):
                os.replace(self.updated_path, self.current_path)
        candidates: list[tuple[Path, Path | None]] = [(self.current_path, None)]
        if self.cert_file and self.key_file:
            candidates.append((self.cert_file, self.key_file))
        candidates.append((self.cert_dir / f"{self.prefix}.crt", self.cert_dir / f"{self.prefix}.key"))
        for cert, key in candidates:
            if cert.exists() and (key is None or key.exists()):
                try:
                    return load_pair(cert, key)
                except (OSError, ValueError):
                    continue
        return None

    def update(self, cert_pem: bytes, key: Any, now: float | None = None) -> CertPair:
        """Write a new timestamped file and switch `-current` to it atomically; returns the stored pair."""
        certs = tuple(x509.load_pem_x509_certificates(cert_pem))
        stamp = time.strftime("%Y-%m-%d-%H-%M-%S", time.localtime(now if now is not None else time.time()))
        ensure_dir(self.cert_dir, c.DIR_MODE)
        path = self.cert_dir / f"{self.prefix}-{stamp}.pem"
        body = b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in certs) + key_pem(key)
        write_file_atomic(path, body, c.PRIVATE_FILE_MODE)
        with contextlib.suppress(FileNotFoundError):
            self.updated_path.unlink()
        os.symlink(str(path.absolute()), self.updated_path)
        os.replace(self.updated_path, self.current_path)
        return CertPair(path, certs, key)


def ensure_self_signed_serving(cert_path: Path, key_path: Path, hostname: str) -> CertPair:
    """Load `kubelet.crt`/`kubelet.key`, or generate them as the kubelet does (throw-away CA + leaf, RSA-2048, 1 year)."""
    with contextlib.suppress(OSError, ValueError):
        return load_pair(cert_path, key_path)
    now = dt.datetime.now(dt.UTC)
    stamp = int(now.timestamp())
    start, end = now - dt.timedelta(hours=1), now + dt.timedelta(days=365)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{hostname}-ca@{stamp}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, True, False, False, True, False, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    try:
        san: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(hostname))
    except ValueError:
        san = x509.DNSName(hostname)
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{hostname}@{stamp}")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([san]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    chain = leaf.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM)
    write_file_atomic(cert_path, chain, c.CERT_FILE_MODE)
    write_file_atomic(key_path, key_pem(key), c.PRIVATE_FILE_MODE)
    return CertPair(cert_path, (leaf, ca), key)
