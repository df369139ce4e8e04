"""Certificate renewal and expiration reports (kubeadm's phases/certs/renewal): the renewable items, how each is read
and written (a cert/key pair or a kubeconfig with embedded client cert), renewal with the local CA, expiration info.

Called by cli/certs.py (`certs renew`, `certs check-expiration`) and later by `upgrade apply/node`. Works on files only;
the kubeconfig reader/writer imports pykubeadm.kubeconfig lazily (kubeconfig itself builds on pki).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

from cryptography import x509
from cryptography.x509.oid import NameOID

from pykubeadm import constants as c
from pykubeadm.errors import CertError
from pykubeadm.pki import certlist
from pykubeadm.pki.certs import (
    AltNames,
    CertConfig,
    encode_cert_pem,
    ext_key_usages,
    new_signed_cert,
    parse_certs_pem,
    san_dns_names,
    san_ips,
    subject_values,
    try_load_cert,
    write_cert_and_key,
)
from pykubeadm.pki.create import (
    load_certificate_authority,
    using_external_ca,
    using_external_etcd_ca,
    using_external_front_proxy_ca,
)
from pykubeadm.pki.keys import PrivateKey, encode_private_key_pem, generate_private_key

__all__ = [
    "CA_NAMES",
    "ExpirationInfo",
    "RenewHandler",
    "ca_expiration",
    "cert_expiration",
    "is_externally_managed",
    "renew_handlers",
    "renew_using_local_ca",
]


class CertReadWriter(Protocol):
    def exists(self) -> bool: ...
    def read(self) -> x509.Certificate: ...
    def write(self, cert: x509.Certificate, key: PrivateKey) -> None: ...


@dataclass(frozen=True)
class _PairReadWriter:
    pki_dir: Path
    base_name: str

    def exists(self) -> bool:
        return (self.pki_dir / f"{self.base_name}.crt").exists()

    def read(self) -> x509.Certificate:
        return try_load_cert(self.pki_dir, self.base_name)

    def write(self, cert: x509.Certificate, key: PrivateKey) -> None:
        write_cert_and_key(self.pki_dir, self.base_name, cert, key)


@dataclass(frozen=True)
class _KubeconfigReadWriter:
    """The client cert embedded in a kubeconfig; writing replaces cert+key and refreshes the embedded CA."""

    path: Path
    pki_dir: Path

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> x509.Certificate:
        from pykubeadm.kubeconfig.config import client_cert_and_key_pem, load_kubeconfig

        cfg = load_kubeconfig(self.path)
        cert_pem, _ = client_cert_and_key_pem(cfg, str(self.path))
        if not cert_pem:
            raise CertError(f"kubeConfig file {self.path} does not have an embedded client certificate")
        try:
            return parse_certs_pem(cert_pem, str(self.path))[0]
        except CertError as err:
            raise CertError(f"kubeConfig file {self.path} does not contain a valid client certificate: {err}") from err

    def write(self, cert: x509.Certificate, key: PrivateKey) -> None:
        import base64

        from pykubeadm.kubeconfig.config import current_cluster, current_user, load_kubeconfig, write_kubeconfig

        cfg = load_kubeconfig(self.path)
        _, user = current_user(cfg, str(self.path))
        user.pop("client-certificate", None)
        user.pop("client-key", None)
        user["client-certificate-data"] = base64.b64encode(encode_cert_pem(cert)).decode()
        user["client-key-data"] = base64.b64encode(encode_private_key_pem(key)).decode()
        ca_path = self.pki_dir / f"{c.CA_CERT_AND_KEY_BASE_NAME}.crt"
        if ca_path.exists():
            _, cluster, _ = current_cluster(cfg, str(self.path))
            cluster.pop("certificate-authority", None)
            ca_cert = parse_certs_pem(ca_path.read_bytes(), str(ca_path))[0]
            cluster["certificate-authority-data"] = base64.b64encode(encode_cert_pem(ca_cert)).decode()
        write_kubeconfig(self.path, cfg)


@dataclass(frozen=True)
class RenewHandler:
    """One renewable item: `name` (renew sub-command), long name, CA (name and base name), where it lives."""

    name: str
    long_name: str
    ca_name: str
    ca_base_name: str
    readwriter: CertReadWriter


#: CA rows of the check-expiration report: (name, base name).
CA_NAMES: tuple[tuple[str, str], ...] = (
    ("ca", c.CA_CERT_AND_KEY_BASE_NAME),
    ("etcd-ca", c.ETCD_CA_CERT_AND_KEY_BASE_NAME),
    ("front-proxy-ca", c.FRONT_PROXY_CA_CERT_AND_KEY_BASE_NAME),
)


def renew_handlers(pki_dir: Path, kubeconfig_dir: Path, external_etcd: bool = False) -> list[RenewHandler]:
    """Every renewable item, sorted by name (renewal.NewManager): leaf certs and the kubeconfig-embedded certs."""
    from pykubeadm.kubeconfig.specs import KUBECONFIG_LIST

    handlers: list[RenewHandler] = []
    for spec in certlist.cert_list(external_etcd):
        if spec.is_ca:
            continue
        ca = certlist.ca_of(spec)
        handlers.append(
            RenewHandler(spec.name, spec.long_name, ca.name, ca.base_name, _PairReadWriter(pki_dir, spec.base_name))
        )
    for kspec in KUBECONFIG_LIST:
        if not kspec.renew_long_name:
            continue
        handlers.append(
            RenewHandler(
                kspec.file_name,
                kspec.renew_long_name,
                "ca",
                c.CA_CERT_AND_KEY_BASE_NAME,
                _KubeconfigReadWriter(kubeconfig_dir / kspec.file_name, pki_dir),
            )
        )
    return sorted(handlers, key=lambda h: h.name)


def is_externally_managed(pki_dir: Path, ca_base_name: str) -> bool:
    """Whether a CA's key is absent (renewal.Manager.IsExternallyManaged); raises for an incomplete external CA."""
    check = {
        c.CA_CERT_AND_KEY_BASE_NAME: using_external_ca,
        c.FRONT_PROXY_CA_CERT_AND_KEY_BASE_NAME: using_external_front_proxy_ca,
        c.ETCD_CA_CERT_AND_KEY_BASE_NAME: using_external_etcd_ca,
    }.get(ca_base_name)
    if check is None:
        raise CertError(f"unknown certificate authority {ca_base_name}")
    external, problem = check(pki_dir)
    if problem:  # an unloadable CA certificate, or an external CA whose certificates do not chain to it
        raise CertError(f"Error checking external CA condition for {ca_base_name} certificate authority: {problem}")
    return external


def renew_using_local_ca(
    handler: RenewHandler,
    pki_dir: Path,
    encryption_algorithm: str,
    validity: timedelta = c.CERTIFICATE_VALIDITY_PERIOD,
    start: datetime | None = None,
) -> bool:
    """Renew one item with its CA: same CN, O, SANs and extended usages, a new key, NotBefore = start − 5m, NotAfter =
    start + validity. False (nothing done) when the CA is external."""
    if is_externally_managed(pki_dir, handler.ca_base_name):
        return False
    old = handler.readwriter.read()
    start = start or datetime.now(UTC)
    cfg = CertConfig(
        common_name=(subject_values(old.subject, NameOID.COMMON_NAME) or [""])[0],
        organization=tuple(subject_values(old.subject, NameOID.ORGANIZATION_NAME)),
        alt_names=AltNames(tuple(san_dns_names(old)), tuple(san_ips(old))),
        usages=tuple(ext_key_usages(old)),
        not_before=start - c.CERTIFICATE_BACKDATE,
        not_after=start + validity,
        encryption_algorithm=encryption_algorithm,
    )
    ca_cert, ca_key = load_certificate_authority(pki_dir, handler.ca_base_name)
    key = generate_private_key(encryption_algorithm)
    cert = new_signed_cert(cfg, key.public_key(), ca_cert, ca_key)
    handler.readwriter.write(cert, key)
    return True


@dataclass(frozen=True)
class ExpirationInfo:
    """One row of `certs check-expiration`."""

    name: str
    expiration: datetime | None
    ca_name: str
    externally_managed: bool
    missing: bool = False

    def residual(self, now: datetime | None = None) -> timedelta:
        """Time left until expiration; negative once expired (kubeadm does not clamp it)."""
        if self.expiration is None:
            return timedelta(0)
        return self.expiration - (now or datetime.now(UTC))


def cert_expiration(handler: RenewHandler, pki_dir: Path) -> ExpirationInfo:
    if not handler.readwriter.exists():
        return ExpirationInfo(handler.name, None, handler.ca_name, False, missing=True)
    cert = handler.readwriter.read()
    return ExpirationInfo(
        handler.name, cert.not_valid_after_utc, handler.ca_name, _external_or_false(pki_dir, handler.ca_base_name)
    )


def ca_expiration(name: str, base_name: str, pki_dir: Path) -> ExpirationInfo:
    path = pki_dir / f"{base_name}.crt"
    if not path.exists():
        return ExpirationInfo(name, None, "", False, missing=True)
    cert = try_load_cert(pki_dir, base_name)
    return ExpirationInfo(name, cert.not_valid_after_utc, "", _external_or_false(pki_dir, base_name))


def _external_or_false(pki_dir: Path, ca_base_name: str) -> bool:
    return is_externally_managed(pki_dir, ca_base_name)


def expiration_report(
    pki_dir: Path, kubeconfig_dir: Path, external_etcd: bool = False
) -> tuple[list[ExpirationInfo], list[ExpirationInfo]]:
    """(certificates, certificate authorities) rows of check-expiration, in kubeadm's order."""
    certs = [cert_expiration(h, pki_dir) for h in renew_handlers(pki_dir, kubeconfig_dir, external_etcd)]
    cas: Sequence[tuple[str, str]] = [x for x in CA_NAMES if not (external_etcd and x[0] == "etcd-ca")]
    return certs, [ca_expiration(n, b, pki_dir) for n, b in cas]
