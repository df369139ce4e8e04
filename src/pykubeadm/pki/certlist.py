"""The certificate table (kubeadm's certlist.go): one frozen CertSpec per certificate, in generation order.

Read by phases/init/certs.py (one sub-phase per row), pki.create, pki.renewal and pki.csr. `cert_config()` turns a
row plus the cluster's explicit values (`PkiParams`) into the CertConfig the certificate is built from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from cryptography import x509

from pykubeadm import constants as c
from pykubeadm.errors import CertError
from pykubeadm.pki.altnames import Warn, apiserver_alt_names, etcd_alt_names
from pykubeadm.pki.certs import CLIENT_AUTH, SERVER_AUTH, CertConfig

__all__ = [
    "APISERVER",
    "APISERVER_ETCD_CLIENT",
    "APISERVER_KUBELET_CLIENT",
    "CA",
    "CERT_LIST",
    "ETCD_CA",
    "ETCD_HEALTHCHECK_CLIENT",
    "ETCD_PEER",
    "ETCD_SERVER",
    "FRONT_PROXY_CA",
    "FRONT_PROXY_CLIENT",
    "SA_LONG_NAME",
    "CertSpec",
    "PkiParams",
    "ca_of",
    "cert_config",
    "cert_list",
    "spec_by_name",
]

SA_LONG_NAME = "private key for signing service account tokens along with its public key"


@dataclass(frozen=True)
class PkiParams:
    """The cluster values certificates depend on (taken from InitConfiguration/ClusterConfiguration by the phase)."""

    node_name: str
    advertise_address: str
    service_subnet: str = c.DEFAULT_SERVICE_SUBNET
    dns_domain: str = c.DEFAULT_DNS_DOMAIN
    control_plane_endpoint: str = ""
    apiserver_cert_sans: tuple[str, ...] = ()
    etcd_server_cert_sans: tuple[str, ...] = ()
    etcd_peer_cert_sans: tuple[str, ...] = ()
    encryption_algorithm: str = c.DEFAULT_ENCRYPTION_ALGORITHM
    certificate_validity_period: timedelta = c.CERTIFICATE_VALIDITY_PERIOD
    ca_certificate_validity_period: timedelta = c.CA_CERTIFICATE_VALIDITY_PERIOD
    external_etcd: bool = False


#: A mutator fills the parts of a CertConfig that depend on the cluster (CN = node name, SANs).
Mutator = Callable[[PkiParams, CertConfig, Warn], CertConfig]


@dataclass(frozen=True)
class CertSpec:
    """One certificate: phase/renew name, help text, file base name, signing CA (empty for a CA), subject, usages."""

    name: str
    long_name: str
    base_name: str
    ca_name: str
    common_name: str = ""
    organization: tuple[str, ...] = ()
    usages: tuple[x509.ObjectIdentifier, ...] = ()
    mutators: tuple[Mutator, ...] = field(default=())

    @property
    def is_ca(self) -> bool:
        return not self.ca_name


def _node_cn(p: PkiParams, cfg: CertConfig, warn: Warn) -> CertConfig:
    return replace(cfg, common_name=p.node_name)


def _apiserver_sans(p: PkiParams, cfg: CertConfig, warn: Warn) -> CertConfig:
    alt = apiserver_alt_names(
        p.node_name,
        p.advertise_address,
        p.service_subnet,
        p.dns_domain,
        p.control_plane_endpoint,
        p.apiserver_cert_sans,
        warn,
    )
    return replace(cfg, alt_names=alt)


def _etcd_server_sans(p: PkiParams, cfg: CertConfig, warn: Warn) -> CertConfig:
    alt = etcd_alt_names(p.node_name, p.advertise_address, p.etcd_server_cert_sans, "etcd/server", warn)
    return replace(cfg, alt_names=alt)


def _etcd_peer_sans(p: PkiParams, cfg: CertConfig, warn: Warn) -> CertConfig:
    alt = etcd_alt_names(p.node_name, p.advertise_address, p.etcd_peer_cert_sans, "etcd/peer", warn)
    return replace(cfg, alt_names=alt)


CA = CertSpec(
    "ca",
    "self-signed Kubernetes CA to provision identities for other Kubernetes components",
    c.CA_CERT_AND_KEY_BASE_NAME,
    "",
    c.CA_COMMON_NAME,
)
APISERVER = CertSpec(
    "apiserver",
    "certificate for serving the Kubernetes API",
    c.APISERVER_CERT_AND_KEY_BASE_NAME,
    "ca",
    c.APISERVER_CERT_COMMON_NAME,
    usages=(SERVER_AUTH,),
    mutators=(_apiserver_sans,),
)
APISERVER_KUBELET_CLIENT = CertSpec(
    "apiserver-kubelet-client",
    "certificate for the API server to connect to kubelet",
    c.APISERVER_KUBELET_CLIENT_CERT_AND_KEY_BASE_NAME,
    "ca",
    c.APISERVER_KUBELET_CLIENT_CERT_COMMON_NAME,
    organization=(c.CLUSTER_ADMINS_GROUP_AND_CLUSTER_ROLE_BINDING,),
    usages=(CLIENT_AUTH,),
)
FRONT_PROXY_CA = CertSpec(
    "front-proxy-ca",
    "self-signed CA to provision identities for front proxy",
    c.FRONT_PROXY_CA_CERT_AND_KEY_BASE_NAME,
    "",
    c.FRONT_PROXY_CA_COMMON_NAME,
)
FRONT_PROXY_CLIENT = CertSpec(
    "front-proxy-client",
    "certificate for the front proxy client",
    c.FRONT_PROXY_CLIENT_CERT_AND_KEY_BASE_NAME,
    "front-proxy-ca",
    c.FRONT_PROXY_CLIENT_CERT_COMMON_NAME,
    usages=(CLIENT_AUTH,),
)
ETCD_CA = CertSpec(
    "etcd-ca",
    "self-signed CA to provision identities for etcd",
    c.ETCD_CA_CERT_AND_KEY_BASE_NAME,
    "",
    c.ETCD_CA_COMMON_NAME,
)
ETCD_SERVER = CertSpec(
    "etcd-server",
    "certificate for serving etcd",
    c.ETCD_SERVER_CERT_AND_KEY_BASE_NAME,
    "etcd-ca",
    usages=(SERVER_AUTH, CLIENT_AUTH),
    mutators=(_node_cn, _etcd_server_sans),
)
ETCD_PEER = CertSpec(
    "etcd-peer",
    "certificate for etcd nodes to communicate with each other",
    c.ETCD_PEER_CERT_AND_KEY_BASE_NAME,
    "etcd-ca",
    usages=(SERVER_AUTH, CLIENT_AUTH),
    mutators=(_node_cn, _etcd_peer_sans),
)
ETCD_HEALTHCHECK_CLIENT = CertSpec(
    "etcd-healthcheck-client",
    "certificate for liveness probes to healthcheck etcd",
    c.ETCD_HEALTHCHECK_CLIENT_CERT_AND_KEY_BASE_NAME,
    "etcd-ca",
    c.ETCD_HEALTHCHECK_CLIENT_CERT_COMMON_NAME,
    usages=(CLIENT_AUTH,),
)
APISERVER_ETCD_CLIENT = CertSpec(
    "apiserver-etcd-client",
    "certificate the apiserver uses to access etcd",
    c.APISERVER_ETCD_CLIENT_CERT_AND_KEY_BASE_NAME,
    "etcd-ca",
    c.APISERVER_ETCD_CLIENT_CERT_COMMON_NAME,
    usages=(CLIENT_AUTH,),
)

#: Every certificate, CAs before the certs they sign, in kubeadm's phase order.
CERT_LIST: tuple[CertSpec, ...] = (
    CA,
    APISERVER,
    APISERVER_KUBELET_CLIENT,
    FRONT_PROXY_CA,
    FRONT_PROXY_CLIENT,
    ETCD_CA,
    ETCD_SERVER,
    ETCD_PEER,
    ETCD_HEALTHCHECK_CLIENT,
    APISERVER_ETCD_CLIENT,
)


def cert_list(external_etcd: bool = False) -> tuple[CertSpec, ...]:
    """The certificates of a node: without the etcd-CA tree when etcd is external (GetCertsWithoutEtcd)."""
    if external_etcd:
        return tuple(s for s in CERT_LIST if s.name != "etcd-ca" and s.ca_name != "etcd-ca")
    return CERT_LIST


def spec_by_name(name: str) -> CertSpec:
    for s in CERT_LIST:
        if s.name == name:
            return s
    raise CertError(f"unknown certificate {name!r}")


def ca_of(spec: CertSpec) -> CertSpec:
    """The CA row that signs `spec`."""
    return spec_by_name(spec.ca_name)


def cert_config(spec: CertSpec, params: PkiParams, start: datetime, warn: Warn | None = None) -> CertConfig:
    """The CertConfig of `spec` for this cluster (KubeadmCert.GetConfig): mutators applied, NotBefore = start − 5m,
    NotAfter = start + (CA) certificate validity period, the cluster's encryption algorithm."""
    from pykubeadm.pki.altnames import _default_warn

    cfg = CertConfig(
        common_name=spec.common_name,
        organization=spec.organization,
        usages=spec.usages,
        encryption_algorithm=params.encryption_algorithm,
    )
    for m in spec.mutators:
        cfg = m(params, cfg, warn or _default_warn)
    period = params.ca_certificate_validity_period if spec.is_ca else params.certificate_validity_period
    return cfg.with_validity(start - c.CERTIFICATE_BACKDATE, start + period)
