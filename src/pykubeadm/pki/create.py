"""Create-or-reuse of the PKI files (kubeadm's phases/certs/certs.go and the init certs phase's run functions).

Called by phases/init/certs.py (and later join's control-plane-prepare). Each function loads and checks what exists,
otherwise generates and writes, and reports which it did through `out` with kubeadm's `[certs]` lines. External CA
detection (ca.crt without ca.key) lives here too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from cryptography import x509

from pykubeadm import constants as c
from pykubeadm.errors import CertError
from pykubeadm.pki.altnames import Warn
from pykubeadm.pki.certlist import CertSpec, PkiParams, ca_of, cert_config
from pykubeadm.pki.certs import (
    CertConfig,
    cert_or_key_exist,
    format_go_time,
    has_server_auth,
    is_ca,
    new_self_signed_ca,
    new_signed_cert,
    san_dns_names,
    san_ips,
    try_load_cert,
    try_load_cert_and_key,
    try_load_cert_chain,
    try_load_key,
    write_cert_and_key,
    write_key,
    write_public_key,
)
from pykubeadm.pki.keys import PrivateKey, generate_private_key, parse_private_key_pem
from pykubeadm.pki.verify import verify_cert_chain, verify_hostname

__all__ = [
    "Reporter",
    "check_certificate_period_validity",
    "create_ca_files",
    "create_cert_files",
    "create_service_account_key_files",
    "load_certificate_authority",
    "shared_certificates_exist",
    "using_external_ca",
    "using_external_etcd_ca",
    "using_external_front_proxy_ca",
    "validate_certificate_with_config",
]

log = logging.getLogger("pykubeadm.pki")

Reporter = Callable[[str], None]


def check_certificate_period_validity(base_name: str, cert: x509.Certificate, now: datetime | None = None) -> None:
    """Warn (never fail) when a certificate is not valid yet or has expired (CheckCertificatePeriodValidity)."""
    now = now or datetime.now(UTC)
    period = (
        f"NotBefore: {format_go_time(cert.not_valid_before_utc)}, NotAfter: {format_go_time(cert.not_valid_after_utc)}"
    )
    if now < cert.not_valid_before_utc:
        log.warning(
            f"WARNING: could not validate bounds for certificate {base_name}: the certificate is not valid yet: {period}"
        )
    if now > cert.not_valid_after_utc:
        log.warning(
            f"WARNING: could not validate bounds for certificate {base_name}: the certificate has expired: {period}"
        )


def load_certificate_authority(pki_dir: Path, base_name: str) -> tuple[x509.Certificate, PrivateKey]:
    """Load `<base>.crt`/`.key` and check it is a CA (LoadCertificateAuthority)."""
    if not cert_or_key_exist(pki_dir, base_name):
        raise CertError(f"couldn't load {base_name} certificate authority from {pki_dir}")
    try:
        ca_cert, ca_key = try_load_cert_and_key(pki_dir, base_name)
    except CertError as err:
        raise CertError(f"failure loading {base_name} certificate authority: {err}") from err
    check_certificate_period_validity(base_name, ca_cert)
    if not is_ca(ca_cert):
        raise CertError(f"{base_name} certificate is not a certificate authority")
    return ca_cert, ca_key


# --- CAs ---------------------------------------------------------------------------------------------------------------


def create_ca_files(
    spec: CertSpec,
    params: PkiParams,
    pki_dir: Path,
    out: Reporter,
    start: datetime | None = None,
    key: PrivateKey | None = None,
) -> None:
    """The `certs/<ca>` phase: reuse an existing CA (with or without its key), else generate and write one.
    `key` may be a pre-generated key of the configured algorithm."""
    if not spec.is_ca:
        raise CertError(f"this function should only be used for CAs, but cert {spec.name} has CA {spec.ca_name}")
    try:
        cert = try_load_cert(pki_dir, spec.base_name)
    except CertError:
        cert = None
    if cert is not None:
        check_certificate_period_validity(spec.base_name, cert)
        try:
            try_load_key(pki_dir, spec.base_name)
        except CertError:
            out(f"[certs] Using existing {spec.base_name} keyless certificate authority")
            return
        out(f"[certs] Using existing {spec.base_name} certificate authority")
        return
    _write_ca_if_not_exist(spec, params, pki_dir, out, start or datetime.now(UTC), key)


def _write_ca_if_not_exist(
    spec: CertSpec, params: PkiParams, pki_dir: Path, out: Reporter, start: datetime, key: PrivateKey | None
) -> None:
    if cert_or_key_exist(pki_dir, spec.base_name):
        try:
            ca_cert, _ = try_load_cert_and_key(pki_dir, spec.base_name)
        except CertError as err:
            raise CertError(f"failure loading {spec.base_name} certificate: {err}") from err
        check_certificate_period_validity(spec.base_name, ca_cert)
        if not is_ca(ca_cert):
            raise CertError(f"certificate {spec.base_name} is not a CA")
        out(f'[certs] Using the existing "{spec.base_name}" certificate and key')
        return
    cfg = cert_config(spec, params, start)
    key = key or generate_private_key(cfg.encryption_algorithm)
    ca_cert = new_self_signed_ca(cfg, key)
    out(f'[certs] Generating "{spec.base_name}" certificate and key')
    try:
        write_cert_and_key(pki_dir, spec.base_name, ca_cert, key)
    except CertError as err:
        raise CertError(f"failure while saving {spec.base_name} certificate and key: {err}") from err


# --- certificates signed by a CA ---------------------------------------------------------------------------------------


def create_cert_files(
    spec: CertSpec,
    params: PkiParams,
    pki_dir: Path,
    out: Reporter,
    start: datetime | None = None,
    warn: Warn | None = None,
    key: PrivateKey | None = None,
) -> None:
    """The `certs/<cert>` phase: reuse an existing cert that chains to its CA, else sign and write a new one.
    `key` may be a pre-generated key of the right algorithm (used when keys are generated in parallel)."""
    ca_spec = ca_of(spec)
    try:
        cert, intermediates = try_load_cert_chain(pki_dir, spec.base_name)
    except CertError:
        cert = None
    if cert is not None:
        check_certificate_period_validity(spec.base_name, cert)
        try:
            ca_cert = try_load_cert(pki_dir, ca_spec.base_name)
        except CertError as err:
            raise CertError(f"couldn't load CA certificate {ca_spec.name}: {err}") from err
        check_certificate_period_validity(ca_spec.base_name, ca_cert)
        try:
            verify_cert_chain(cert, ca_cert, intermediates)
        except CertError as err:
            raise CertError(
                f"[certs] certificate {spec.base_name} not signed by CA certificate {ca_spec.base_name}: {err}"
            ) from err
        out(f"[certs] Using existing {spec.base_name} certificate and key on disk")
        return
    try:
        ca_cert, ca_key = load_certificate_authority(pki_dir, ca_spec.base_name)
    except CertError as err:
        raise CertError(f"couldn't load CA certificate {ca_spec.name}: {err}") from err
    cfg = cert_config(spec, params, start or datetime.now(UTC), warn)
    try:
        _write_cert_if_not_exist(spec.base_name, pki_dir, ca_cert, ca_key, cfg, out, key)
    except CertError as err:
        raise CertError(f'failed to write or validate certificate "{spec.name}": {err}') from err


def validate_certificate_with_config(cert: x509.Certificate, base_name: str, cfg: CertConfig) -> None:
    """Every expected DNS name and IP must verify against the certificate (validateCertificateWithConfig)."""
    for name in cfg.alt_names.dns_names:
        try:
            verify_hostname(cert, name)
        except CertError as err:
            raise CertError(f"certificate {base_name} is invalid: {err}") from err
    for ip in cfg.alt_names.ips:
        try:
            verify_hostname(cert, str(ip))
        except CertError as err:
            raise CertError(f"certificate {base_name} is invalid: {err}") from err


def _write_cert_if_not_exist(
    base_name: str,
    pki_dir: Path,
    ca_cert: x509.Certificate,
    ca_key: PrivateKey,
    cfg: CertConfig,
    out: Reporter,
    key: PrivateKey | None,
) -> None:
    if cert_or_key_exist(pki_dir, base_name):
        try:
            try_load_key(pki_dir, base_name)
        except CertError as err:
            raise CertError(f"failure loading {base_name} key: {err}") from err
        try:
            existing, intermediates = try_load_cert_chain(pki_dir, base_name)
        except CertError as err:
            raise CertError(f"failure loading {base_name} certificate: {err}") from err
        check_certificate_period_validity(base_name, existing)
        try:
            verify_cert_chain(existing, ca_cert, intermediates)
        except CertError as err:
            raise CertError(f"certificate {base_name} is not signed by corresponding CA") from err
        validate_certificate_with_config(existing, base_name, cfg)
        out(f'[certs] Using the existing "{base_name}" certificate and key')
        return
    key = key or generate_private_key(cfg.encryption_algorithm)
    cert = new_signed_cert(cfg, key.public_key(), ca_cert, ca_key)
    out(f'[certs] Generating "{base_name}" certificate and key')
    try:
        write_cert_and_key(pki_dir, base_name, cert, key)
    except CertError as err:
        raise CertError(f"failure while saving {base_name} certificate and key: {err}") from err
    if has_server_auth(cert):
        dns = " ".join(san_dns_names(cert))
        ips = " ".join(str(ip) for ip in san_ips(cert))
        out(f"[certs] {base_name} serving cert is signed for DNS names [{dns}] and IPs [{ips}]")


# --- service account key pair ------------------------------------------------------------------------------------------


def create_service_account_key_files(
    pki_dir: Path, algorithm: str, out: Reporter, key: PrivateKey | None = None
) -> None:
    """The `certs/sa` phase: keep a loadable sa.key, else write a new sa.key (0600) and sa.pub (0600)."""
    path = pki_dir / c.SERVICE_ACCOUNT_PRIVATE_KEY_NAME
    if path.exists():
        try:
            parse_private_key_pem(path.read_bytes(), str(path))
        except (CertError, OSError) as err:
            raise CertError(
                f"file {c.SERVICE_ACCOUNT_PRIVATE_KEY_NAME} existed but it could not be loaded properly: {err}"
            ) from err
        out(f'[certs] Using the existing "{c.SERVICE_ACCOUNT_KEY_BASE_NAME}" key')
        return
    key = key or generate_private_key(algorithm)
    out(f'[certs] Generating "{c.SERVICE_ACCOUNT_KEY_BASE_NAME}" key and public key')
    write_key(pki_dir, c.SERVICE_ACCOUNT_KEY_BASE_NAME, key)
    write_public_key(pki_dir, c.SERVICE_ACCOUNT_KEY_BASE_NAME, key.public_key())


# --- external CA mode --------------------------------------------------------------------------------------------------


def _validate_ca_cert(pki_dir: Path, ca_base: str, ux_name: str) -> x509.Certificate:
    try:
        cert = try_load_cert(pki_dir, ca_base)
    except CertError as err:
        raise CertError(f"failure loading certificate for {ux_name}: {err}") from err
    if not is_ca(cert):
        raise CertError(f"certificate {ux_name} is not a CA")
    return cert


def _validate_signed_cert(pki_dir: Path, ca_base: str, base: str, ux_name: str) -> None:
    try:
        ca_cert = try_load_cert(pki_dir, ca_base)
    except CertError as err:
        raise CertError(f"failure loading certificate authority for {ux_name}: {err}") from err
    try:
        cert, intermediates = try_load_cert_chain(pki_dir, base)
    except CertError as err:
        raise CertError(f"failure loading certificate for {ux_name}: {err}") from err
    try:
        verify_cert_chain(cert, ca_cert, intermediates)
    except CertError as err:
        raise CertError(f"certificate {ux_name} is not signed by corresponding CA: {err}") from err


def _using_external(pki_dir: Path, ca_base: str, ca_ux: str, signed: list[tuple[str, str]]) -> tuple[bool, str | None]:
    try:
        _validate_ca_cert(pki_dir, ca_base, ca_ux)
    except CertError as err:
        return False, str(err)
    if (pki_dir / f"{ca_base}.key").exists():
        return False, None
    for base, ux in signed:
        try:
            _validate_signed_cert(pki_dir, ca_base, base, ux)
        except CertError as err:
            return True, str(err)
    return True, None


def using_external_ca(pki_dir: Path) -> tuple[bool, str | None]:
    """(external, problem): ca.crt present without ca.key; apiserver and apiserver-kubelet-client must chain to it."""
    return _using_external(
        pki_dir,
        c.CA_CERT_AND_KEY_BASE_NAME,
        "CA",
        [
            (c.APISERVER_CERT_AND_KEY_BASE_NAME, "API server"),
            (c.APISERVER_KUBELET_CLIENT_CERT_AND_KEY_BASE_NAME, "API server kubelet client"),
        ],
    )


def using_external_front_proxy_ca(pki_dir: Path) -> tuple[bool, str | None]:
    return _using_external(
        pki_dir,
        c.FRONT_PROXY_CA_CERT_AND_KEY_BASE_NAME,
        "front-proxy CA",
        [(c.FRONT_PROXY_CLIENT_CERT_AND_KEY_BASE_NAME, "front-proxy client")],
    )


def using_external_etcd_ca(pki_dir: Path) -> tuple[bool, str | None]:
    return _using_external(
        pki_dir,
        c.ETCD_CA_CERT_AND_KEY_BASE_NAME,
        "etcd CA",
        [
            (c.APISERVER_ETCD_CLIENT_CERT_AND_KEY_BASE_NAME, "apiserver etcd client"),
            (c.ETCD_SERVER_CERT_AND_KEY_BASE_NAME, "etcd server"),
            (c.ETCD_PEER_CERT_AND_KEY_BASE_NAME, "etcd peer"),
            (c.ETCD_HEALTHCHECK_CLIENT_CERT_AND_KEY_BASE_NAME, "etcd health check client"),
        ],
    )


def shared_certificates_exist(pki_dir: Path, external_etcd: bool = False) -> None:
    """The certificates control-plane nodes share (SharedCertificateExists, used by control-plane join to decide on
    download-certs): ca, sa, front-proxy-ca and (local etcd) etcd/ca. A missing CA key only warns (external CA);
    anything else missing raises one CertError listing every problem as kubeadm's aggregate does."""
    errs: list[str] = []

    def ca_and_key(base: str, ux: str) -> None:
        try:
            _validate_ca_cert(pki_dir, base, ux)
        except CertError as err:
            errs.append(str(err))
            return
        try:
            try_load_key(pki_dir, base)
        except CertError as err:
            log.warning(f"assuming external key for {ux}: {err}")

    ca_and_key(c.CA_CERT_AND_KEY_BASE_NAME, "CA")
    try:
        parse_private_key_pem((pki_dir / c.SERVICE_ACCOUNT_PRIVATE_KEY_NAME).read_bytes(), str(pki_dir / "sa.key"))
        from pykubeadm.pki.certs import try_load_public_key

        try_load_public_key(pki_dir, c.SERVICE_ACCOUNT_KEY_BASE_NAME)
    except (CertError, OSError) as err:
        errs.append(f"failure loading key for service account: {err}")
    ca_and_key(c.FRONT_PROXY_CA_CERT_AND_KEY_BASE_NAME, "front-proxy CA")
    if not external_etcd:
        ca_and_key(c.ETCD_CA_CERT_AND_KEY_BASE_NAME, "etcd CA")
    if errs:
        raise CertError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
