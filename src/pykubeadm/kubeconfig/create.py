"""Create-or-reuse of kubeconfig files (kubeadm's phases/kubeconfig): client-cert kubeconfigs signed by the cluster CA,
the existing-file checks, external-CA validation and `kubeconfig user`.

Called by phases/init/kubeconfig.py, cli/kubeconfig.py (`kubeconfig user`) and pki.renewal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509

from pykubeadm import constants as c
from pykubeadm.errors import CertError, KubeconfigError
from pykubeadm.kubeconfig.config import (
    Kubeconfig,
    create_basic,
    create_with_certs,
    create_with_token,
    current_cluster,
    dump_kubeconfig,
    load_kubeconfig,
    write_kubeconfig,
)
from pykubeadm.kubeconfig.specs import (
    ADMIN,
    CONTROLLER_MANAGER,
    KUBELET,
    SCHEDULER,
    SUPER_ADMIN,
    KubeconfigParams,
    KubeconfigSpec,
    client_name,
    control_plane_endpoint_url,
    local_api_endpoint_url,
    server_for,
)
from pykubeadm.pki.certs import (
    CLIENT_AUTH,
    CertConfig,
    encode_cert_pem,
    new_signed_cert,
    try_load_cert_and_key,
    try_load_cert_chain,
)
from pykubeadm.pki.create import check_certificate_period_validity
from pykubeadm.pki.keys import PrivateKey, encode_private_key_pem, generate_private_key

__all__ = [
    "build_client_cert_kubeconfig",
    "create_kubeconfig_file",
    "load_ca",
    "user_kubeconfig",
    "validate_kubeconfig",
    "validate_kubeconfigs_for_external_ca",
]

log = logging.getLogger("pykubeadm.kubeconfig")

Reporter = Callable[[str], None]


def load_ca(pki_dir: Path) -> tuple[x509.Certificate, PrivateKey]:
    """ca.crt and ca.key, or kubeadm's "the CA files couldn't be loaded" error naming the file."""
    try:
        ca_cert, ca_key = try_load_cert_and_key(pki_dir, c.CA_CERT_AND_KEY_BASE_NAME)
    except CertError as err:
        raise KubeconfigError(f"couldn't create a kubeconfig; the CA files couldn't be loaded: {err}") from err
    check_certificate_period_validity(c.CA_CERT_AND_KEY_BASE_NAME, ca_cert)
    return ca_cert, ca_key


def build_client_cert_kubeconfig(
    server: str,
    cluster_name: str,
    client: str,
    organizations: Sequence[str],
    ca_cert: x509.Certificate,
    ca_key: PrivateKey,
    not_after: datetime,
    encryption_algorithm: str = c.DEFAULT_ENCRYPTION_ALGORITHM,
    key: PrivateKey | None = None,
) -> Kubeconfig:
    """A kubeconfig with a new client cert (CN=client, O=organizations, ClientAuth; NotBefore = the CA's NotBefore,
    as kubeadm leaves it unset) and its key embedded."""
    key = key or generate_private_key(encryption_algorithm)
    cfg = CertConfig(
        common_name=client,
        organization=tuple(organizations),
        usages=(CLIENT_AUTH,),
        not_after=not_after,
        encryption_algorithm=encryption_algorithm,
    )
    try:
        cert = new_signed_cert(cfg, key.public_key(), ca_cert, ca_key)
    except CertError as err:
        raise KubeconfigError(f"failure while creating {client} client certificate: {err}") from err
    return create_with_certs(
        server, cluster_name, client, encode_cert_pem(ca_cert), encode_private_key_pem(key), encode_cert_pem(cert)
    )


def validate_kubeconfig(path: Path, expected: Kubeconfig, display: str | None = None) -> bool:
    """False if `path` does not exist; raises if it exists with another CA; warns if the server differs."""
    display = display or str(path)
    if not path.exists():
        return False
    try:
        current = load_kubeconfig(path)
    except KubeconfigError as err:
        raise KubeconfigError(f"failed to load kubeconfig file {display} that already exists on disk: {err}") from err
    _, cur_cluster, cur_ca = current_cluster(current, display)
    _, exp_cluster, exp_ca = current_cluster(expected, "expected")
    if cur_ca.strip() != exp_ca.strip():
        raise KubeconfigError(f'a kubeconfig file "{display}" exists already but has got the wrong CA cert')
    if cur_cluster.get("server") != exp_cluster.get("server"):
        log.warning(
            f'a kubeconfig file "{display}" exists already but has an unexpected API Server URL: '
            f"expected: {exp_cluster.get('server')}, got: {cur_cluster.get('server')}"
        )
    return True


def create_kubeconfig_file(
    spec: KubeconfigSpec,
    params: KubeconfigParams,
    kubeconfig_dir: Path,
    pki_dir: Path,
    out: Reporter,
    display_dir: str = c.KUBERNETES_DIR,
    start: datetime | None = None,
    ca: tuple[x509.Certificate, PrivateKey] | None = None,
    key: PrivateKey | None = None,
) -> None:
    """The `kubeconfig/<name>` phase: write `<file>` unless a file with the same CA exists (CreateKubeConfigFile).
    `display_dir` is the directory shown in messages (the node path, /etc/kubernetes)."""
    ca_cert, ca_key = ca or load_ca(pki_dir)
    start = start or datetime.now(UTC)
    config = build_client_cert_kubeconfig(
        server_for(spec, params),
        params.cluster_name,
        client_name(spec, params.node_name),
        spec.organizations,
        ca_cert,
        ca_key,
        start + params.certificate_validity_period,
        params.encryption_algorithm,
        key,
    )
    path = kubeconfig_dir / spec.file_name
    display = f"{display_dir.rstrip('/')}/{spec.file_name}"
    if validate_kubeconfig(path, config, display):
        out(f'[kubeconfig] Using existing kubeconfig file: "{display}"')
        return
    out(f'[kubeconfig] Writing "{spec.file_name}" kubeconfig file')
    try:
        write_kubeconfig(path, config)
    except KubeconfigError as err:
        raise KubeconfigError(f'failed to save kubeconfig file "{display}" on disk: {err}') from err


def validate_kubeconfigs_for_external_ca(
    kubeconfig_dir: Path, pki_dir: Path, params: KubeconfigParams, display_dir: str = c.KUBERNETES_DIR
) -> None:
    """In external CA mode the kubeconfig files must already exist with the cluster CA (ValidateKubeconfigsForExternalCA)."""
    try:
        ca_cert, intermediates = try_load_cert_chain(pki_dir, c.CA_CERT_AND_KEY_BASE_NAME)
    except CertError as err:
        raise KubeconfigError(f"the CA file couldn't be loaded: {err}") from err
    check_certificate_period_validity(c.CA_CERT_AND_KEY_BASE_NAME, ca_cert)
    bundle = b"".join(encode_cert_pem(x) for x in [ca_cert, *intermediates])
    local = create_basic(local_api_endpoint_url(params.advertise_address, params.bind_port), "dummy", "dummy", bundle)
    cpe = create_basic(
        control_plane_endpoint_url(params.control_plane_endpoint, params.advertise_address, params.bind_port),
        "dummy",
        "dummy",
        bundle,
    )
    for spec, expected in (
        (CONTROLLER_MANAGER, local),
        (SCHEDULER, local),
        (ADMIN, cpe),
        (SUPER_ADMIN, cpe),
        (KUBELET, cpe),
    ):
        path = kubeconfig_dir / spec.file_name
        display = f"{display_dir.rstrip('/')}/{spec.file_name}"
        try:
            if not validate_kubeconfig(path, expected, display):
                raise KubeconfigError(f"stat {display}: no such file or directory")
        except KubeconfigError as err:
            raise KubeconfigError(f"the {spec.file_name} file does not exists or it is not valid: {err}") from err


def user_kubeconfig(
    client: str,
    organizations: Sequence[str],
    params: KubeconfigParams,
    pki_dir: Path,
    token: str = "",
    validity_period: timedelta = c.CERTIFICATE_VALIDITY_PERIOD,
    now: datetime | None = None,
) -> str:
    """`kubeconfig user`: the YAML of a kubeconfig for `client` at the controlPlaneEndpoint, with a token or a new
    client certificate valid for `validity_period`."""
    server = control_plane_endpoint_url(params.control_plane_endpoint, params.advertise_address, params.bind_port)
    if token:
        ca_cert, _ = load_ca(pki_dir)  # kubeadm loads ca.crt and ca.key even for a token kubeconfig
        cfg = create_with_token(server, params.cluster_name, client, encode_cert_pem(ca_cert), token)
    else:
        ca_cert, ca_key = load_ca(pki_dir)
        not_after = (now or datetime.now(UTC)) + validity_period
        cfg = build_client_cert_kubeconfig(
            server, params.cluster_name, client, organizations, ca_cert, ca_key, not_after, params.encryption_algorithm
        )
    return dump_kubeconfig(cfg)
