"""What the static Pod builders need to know, as small frozen dataclasses (explicit, testable, config-API independent).

`manifests.config.inputs_from_config` fills them from a v1beta4 ClusterConfiguration + APIEndpoint; tests build them
directly. Paths here are node paths (as written into manifests), never host paths under a root dir.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from pykubeadm import constants as c
from pykubeadm.manifests.args import Arg
from pykubeadm.manifests.pod import EnvSpec, Mount

__all__ = ["CA_CERTS_EXTRA_DIRS", "ClusterInputs", "ComponentExtras", "ExternalEtcdInputs", "LocalEtcdInputs"]

#: Directories mounted next to /etc/ssl/certs into the apiserver and KCM when they exist on the node (symlink targets).
CA_CERTS_EXTRA_DIRS: tuple[str, ...] = (
    "/etc/pki/ca-trust",
    "/etc/pki/tls/certs",
    "/etc/ca-certificates",
    "/usr/share/ca-certificates",
    "/usr/local/share/ca-certificates",
)


@dataclass(frozen=True)
class ComponentExtras:
    """A control-plane component's extraArgs, extraVolumes and extraEnvs."""

    extra_args: tuple[Arg, ...] = ()
    extra_volumes: tuple[Mount, ...] = ()
    extra_envs: tuple[EnvSpec, ...] = ()


@dataclass(frozen=True)
class LocalEtcdInputs:
    data_dir: str = c.DEFAULT_ETCD_DATA_DIR
    extra_args: tuple[Arg, ...] = ()
    extra_envs: tuple[EnvSpec, ...] = ()
    image_repository: str = ""
    image_tag: str = ""


@dataclass(frozen=True)
class ExternalEtcdInputs:
    endpoints: tuple[str, ...]
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""


@dataclass(frozen=True)
class ClusterInputs:
    """Everything the control-plane and etcd manifests depend on."""

    advertise_address: str
    node_name: str
    bind_port: int = c.KUBE_APISERVER_PORT
    kubernetes_version: str = c.KUBERNETES_VERSION
    image_repository: str = c.DEFAULT_IMAGE_REPOSITORY
    certificates_dir: str = c.DEFAULT_CERTIFICATES_DIR
    service_subnet: str = c.DEFAULT_SERVICE_SUBNET
    pod_subnet: str = ""
    dns_domain: str = c.DEFAULT_DNS_DOMAIN
    cluster_name: str = c.DEFAULT_CLUSTER_NAME
    api_server: ComponentExtras = field(default_factory=ComponentExtras)
    controller_manager: ComponentExtras = field(default_factory=ComponentExtras)
    scheduler: ComponentExtras = field(default_factory=ComponentExtras)
    local_etcd: LocalEtcdInputs | None = field(default_factory=LocalEtcdInputs)
    external_etcd: ExternalEtcdInputs | None = None
    #: ca.crt present without ca.key: the KCM gets empty signing flags.
    external_ca: bool = False
    #: timeouts.controlPlaneComponentHealthCheck (sets the startup probes' failureThreshold).
    health_check_timeout: timedelta = c.CONTROL_PLANE_COMPONENT_HEALTH_CHECK_TIMEOUT
    #: `*_proxy` variables of kubeadm's environment, copied into the control-plane containers.
    proxy_env: tuple[EnvSpec, ...] = ()
    #: Which of CA_CERTS_EXTRA_DIRS exist on the node.
    ca_cert_dirs_present: frozenset[str] = frozenset()
