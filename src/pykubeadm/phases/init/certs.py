"""init phase `certs`: one sub-phase per row of pki.certlist (plus `sa` and `all`), each reusing or creating its files.

Declares the phase tree and adapts the config objects to pki's explicit arguments (`pki_params`). Output matches
kubeadm's `[certs]` lines; the certificate folder is shown as the node path (the dry-run folder in dry-run).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pykubeadm import constants as c
from pykubeadm.errors import CertError
from pykubeadm.phases.init._common import shown
from pykubeadm.phases.init.data import InitData
from pykubeadm.pki import certlist
from pykubeadm.pki.certlist import CertSpec, PkiParams
from pykubeadm.pki.create import (
    create_ca_files,
    create_cert_files,
    create_service_account_key_files,
    using_external_ca,
    using_external_front_proxy_ca,
)
from pykubeadm.pki.keys import KeyPool, PrivateKey
from pykubeadm.workflow import Phase, all_phase

if TYPE_CHECKING:
    from pykubeadm.api.v1beta4 import ClusterConfiguration, InitConfiguration

__all__ = [
    "PHASE",
    "detect_external_ca",
    "encryption_algorithm",
    "pki_dir",
    "pki_params",
    "pooled_key",
    "start_key_pool",
    "start_time",
]

MACRO_LONG = "This command is not meant to be run on its own. See list of available subcommands."

_GENERIC_LONG = (
    "Generate the {long}, and save them into {base}.crt and {base}.key files.{sans}\n\n"
    "If both files already exist, kubeadm skips the generation step and existing files will be used."
)
_SA_LONG = (
    f"Generate the private key for signing service account tokens along with its public key, and save them into\n"
    f"{c.SERVICE_ACCOUNT_PRIVATE_KEY_NAME} and {c.SERVICE_ACCOUNT_PUBLIC_KEY_NAME} files.\n\n"
    "If both files already exist, kubeadm skips the generation step and existing files will be used."
)


# --- config → explicit arguments ---------------------------------------------------------------------------------------


def encryption_algorithm(cluster: ClusterConfiguration) -> str:
    """ClusterConfiguration.EncryptionAlgorithmType(): the deprecated PublicKeysECDSA gate wins when set."""
    gates = cluster.feature_gates or {}
    if "PublicKeysECDSA" in gates:
        return "ECDSA-P256" if gates["PublicKeysECDSA"] else "RSA-2048"
    return cluster.encryption_algorithm or c.DEFAULT_ENCRYPTION_ALGORITHM


def pki_params(init: InitConfiguration, cluster: ClusterConfiguration) -> PkiParams:
    """The values certificates depend on, from a defaulted InitConfiguration + ClusterConfiguration."""
    local = cluster.etcd.local
    return PkiParams(
        node_name=init.node_registration.name,
        advertise_address=init.local_api_endpoint.advertise_address,
        service_subnet=cluster.networking.service_subnet or c.DEFAULT_SERVICE_SUBNET,
        dns_domain=cluster.networking.dns_domain or c.DEFAULT_DNS_DOMAIN,
        control_plane_endpoint=cluster.control_plane_endpoint,
        apiserver_cert_sans=tuple(cluster.api_server.cert_sans),
        etcd_server_cert_sans=tuple(local.server_cert_sans) if local else (),
        etcd_peer_cert_sans=tuple(local.peer_cert_sans) if local else (),
        encryption_algorithm=encryption_algorithm(cluster),
        certificate_validity_period=cluster.certificate_validity_period or c.CERTIFICATE_VALIDITY_PERIOD,
        ca_certificate_validity_period=cluster.ca_certificate_validity_period or c.CA_CERTIFICATE_VALIDITY_PERIOD,
        external_etcd=cluster.etcd.external is not None,
    )


def pki_dir(data: InitData) -> Path:
    """certificatesDir where this run writes (the dry-run mirror in dry-run)."""
    return data.layout.with_cert_dir(data.cfg.cluster.certificates_dir).pki_dir


def start_time(data: InitData) -> datetime:
    """kubeadm's process start time: one instant for every certificate of the run."""
    t = data.state.get("start_time")
    if not isinstance(t, datetime):
        t = datetime.now(UTC)
        data.state["start_time"] = t
    return t


def detect_external_ca(data: InitData) -> bool:
    """Set data.state["external_ca"] / ["external_front_proxy_ca"] as kubeadm's newInitData does (once per run);
    raises for an incomplete external CA. The init CLI may call it before running phases."""
    if "external_ca" not in data.state:
        d = data.real_layout.with_cert_dir(data.cfg.cluster.certificates_dir).pki_dir
        external, problem = using_external_ca(d)
        if external and problem:
            raise CertError(f"invalid or incomplete external CA: {problem}")
        fp_external, fp_problem = using_external_front_proxy_ca(d)
        if fp_external and fp_problem:
            raise CertError(f"invalid or incomplete external front-proxy CA: {fp_problem}")
        data.state["external_ca"] = external
        data.state["external_front_proxy_ca"] = fp_external
    return bool(data.state["external_ca"])


# --- run functions -----------------------------------------------------------------------------------------------------


def pooled_key(data: InitData, path: Path, algorithm: str) -> PrivateKey | None:
    """A key from the pool `start_key_pool` started, for the file `path` about to be written; None when the file
    exists (it is reused or checked, not regenerated) or no pool is running."""
    if path.exists():
        return None
    pool = data.state.get("key_pool")
    return pool.take(algorithm) if isinstance(pool, KeyPool) else None


def start_key_pool(data: InitData, algorithm: str, count: int) -> None:
    """Pre-generate `count` RSA keys on two threads for the files about to be written (ECDSA keys are instant)."""
    old = data.state.pop("key_pool", None)
    if isinstance(old, KeyPool):
        old.close()
    if count > 0 and algorithm.startswith("RSA"):
        data.state["key_pool"] = KeyPool(algorithm, count)


def _missing_cert_keys(data: InitData) -> int:
    d = pki_dir(data)
    external_etcd = data.cfg.cluster.etcd.external is not None
    n = sum(1 for s in certlist.cert_list(external_etcd) if not (d / f"{s.base_name}.crt").exists())
    if data.external_ca:
        n = 0
    return n + (0 if (d / c.SERVICE_ACCOUNT_PRIVATE_KEY_NAME).exists() or data.external_ca else 1)


def _run_certs(data: InitData) -> None:
    detect_external_ca(data)
    data.out(f'[certs] Using certificateDir folder "{shown(data, data.cfg.cluster.certificates_dir)}"')
    start_key_pool(data, encryption_algorithm(data.cfg.cluster), _missing_cert_keys(data))


def _run_ca(spec: CertSpec) -> Callable[[InitData], None]:
    def run(data: InitData) -> None:
        if data.cfg.cluster.etcd.external is not None and spec.name == "etcd-ca":
            data.out(f"[certs] External etcd mode: Skipping {spec.base_name} certificate authority generation")
            return
        detect_external_ca(data)
        params = pki_params(data.cfg.init, data.cfg.cluster)
        key = pooled_key(data, pki_dir(data) / f"{spec.base_name}.crt", params.encryption_algorithm)
        create_ca_files(spec, params, pki_dir(data), data.out, start_time(data), key)

    return run


def _run_cert(spec: CertSpec) -> Callable[[InitData], None]:
    def run(data: InitData) -> None:
        if data.cfg.cluster.etcd.external is not None and spec.ca_name == "etcd-ca":
            data.out(f"[certs] External etcd mode: Skipping {spec.base_name} certificate generation")
            return
        detect_external_ca(data)
        params = pki_params(data.cfg.init, data.cfg.cluster)
        key = pooled_key(data, pki_dir(data) / f"{spec.base_name}.crt", params.encryption_algorithm)
        create_cert_files(spec, params, pki_dir(data), data.out, start_time(data), key=key)

    return run


def _run_sa(data: InitData) -> None:
    if detect_external_ca(data):
        data.out("[certs] Using existing sa keys")
        return
    algorithm = encryption_algorithm(data.cfg.cluster)
    key = pooled_key(data, pki_dir(data) / c.SERVICE_ACCOUNT_PRIVATE_KEY_NAME, algorithm)
    create_service_account_key_files(pki_dir(data), algorithm, data.out, key)


# --- declaration -------------------------------------------------------------------------------------------------------

_BASE_FLAGS = ("cert-dir", "config", "kubernetes-version", "dry-run")
_APISERVER_FLAGS = (
    "apiserver-advertise-address",
    "control-plane-endpoint",
    "apiserver-cert-extra-sans",
    "service-dns-domain",
    "service-cidr",
)


def _flags(name: str) -> tuple[str, ...]:
    return _BASE_FLAGS + (_APISERVER_FLAGS if name in ("all", "apiserver") else ())


def _san_description(spec: CertSpec) -> str:
    """ "\n\nDefault SANs are ..." from a default config with advertise address 127.0.0.1, as kubeadm's help shows."""
    if not spec.mutators or spec.is_ca:
        return ""
    params = PkiParams(node_name="", advertise_address="127.0.0.1")
    try:
        cfg = certlist.cert_config(spec, params, datetime.now(UTC), warn=lambda _m: None)
    except CertError:
        return ""
    sans = [d for d in cfg.alt_names.dns_names if d] + [str(ip) for ip in cfg.alt_names.ips]
    return "\n\nDefault SANs are " + ", ".join(sans) if sans else ""


def _sub_phase(spec: CertSpec) -> Phase[InitData]:
    return Phase(
        name=spec.name,
        short=f"Generate the {spec.long_name}",
        long=_GENERIC_LONG.format(long=spec.long_name, base=spec.base_name, sans=_san_description(spec)),
        run=_run_ca(spec) if spec.is_ca else _run_cert(spec),
        inherit_flags=_flags(spec.name),
    )


PHASE: Phase[InitData] = Phase(
    name="certs",
    short="Certificate generation",
    long=MACRO_LONG,
    run=_run_certs,
    children=(
        all_phase("Generate all certificates", _flags("all")),
        *(_sub_phase(s) for s in certlist.CERT_LIST),
        Phase(
            name="sa",
            short="Generate a " + certlist.SA_LONG_NAME,
            long=_SA_LONG,
            run=_run_sa,
            inherit_flags=("cert-dir", "dry-run"),
        ),
    ),
)
