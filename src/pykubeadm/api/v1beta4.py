"""The kubeadm config API `kubeadm.k8s.io/v1beta4` (kubeadm v1.33) as msgspec Structs (`pykubeadm.api._base`), with
kubeadm's static defaults.

Python attributes are the snake_case of the YAML names, which are camelCase or, where Go capitalises an acronym,
set with `field(name=...)` (`api_server.cert_sans` ↔ `apiServer.certSANs`, `local_api_endpoint` ↔ `localAPIEndpoint`).
Durations are `timedelta` (Go format in YAML).
Static defaults (kubeadm's defaults.go) are the field defaults, so a parsed document is already statically defaulted.
Dynamic defaults (token, node name, advertise address, CRI socket, taints) live in `pykubeadm.api.defaults`.
Output: `obj.to_obj()` gives the dict kubeadm would marshal; `pykubeadm.api.yamlio` writes it as YAML.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar, Final, Literal

from pykubeadm import constants as c
from pykubeadm.api._base import Duration, KubeModel, Time, field, field_default, field_names

__all__ = [
    "API_VERSION",
    "DNS",
    "KINDS",
    "APIEndpoint",
    "APIServer",
    "Arg",
    "BootstrapToken",
    "BootstrapTokenDiscovery",
    "ClusterConfiguration",
    "ControlPlaneComponent",
    "Discovery",
    "EnvVar",
    "Etcd",
    "ExternalEtcd",
    "FileDiscovery",
    "HostPathMount",
    "InitConfiguration",
    "JoinConfiguration",
    "JoinControlPlane",
    "LocalEtcd",
    "Networking",
    "NodeRegistrationOptions",
    "Patches",
    "Proxy",
    "ResetConfiguration",
    "Taint",
    "Timeouts",
    "UpgradeApplyConfiguration",
    "UpgradeConfiguration",
    "UpgradeDiffConfiguration",
    "UpgradeNodeConfiguration",
    "UpgradePlanConfiguration",
]

API_VERSION: Final = c.KUBEADM_API_VERSION

DEFAULT_TOKEN_USAGES: tuple[str, ...] = ("signing", "authentication")
DEFAULT_TOKEN_GROUPS: tuple[str, ...] = (c.NODE_BOOTSTRAP_TOKEN_AUTH_GROUP,)
DEFAULT_IMAGE_PULL_POLICY = "IfNotPresent"


# --- small shared types ---------------------------------------------------------------------------------------------


class Arg(KubeModel):
    """One extra command-line argument (`--name=value`); a list of these allows duplicates."""

    _keep = frozenset({"name", "value"})
    name: str = ""
    value: str = ""


class HostPathMount(KubeModel):
    """An extra hostPath volume mounted into a control-plane component."""

    _keep = frozenset({"name", "host_path", "mount_path"})
    name: str = ""
    host_path: str = ""
    mount_path: str = ""
    read_only: bool = False
    path_type: str = ""


class EnvVar(KubeModel):
    """A corev1.EnvVar (`valueFrom` kept as a plain mapping)."""

    _keep = frozenset({"name"})
    name: str = ""
    value: str = ""
    value_from: dict[str, Any] | None = None


class Taint(KubeModel):
    """A corev1.Taint."""

    _keep = frozenset({"key", "effect"})
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: Time | None = None


class Patches(KubeModel):
    directory: str = ""


class APIEndpoint(KubeModel):
    """advertiseAddress (auto-detected at runtime when empty) and bindPort (6443)."""

    advertise_address: str = ""
    bind_port: int = c.KUBE_APISERVER_PORT


class Timeouts(KubeModel):
    """v1beta4 timeouts; every one defaults to kubeadm's constant."""

    control_plane_component_health_check: Duration | None = c.CONTROL_PLANE_COMPONENT_HEALTH_CHECK_TIMEOUT
    kubelet_health_check: Duration | None = c.KUBELET_HEALTH_CHECK_TIMEOUT
    kubernetes_api_call: Duration | None = field(default=c.KUBERNETES_API_CALL_TIMEOUT, name="kubernetesAPICall")
    etcd_api_call: Duration | None = field(default=c.ETCD_API_CALL_TIMEOUT, name="etcdAPICall")
    tls_bootstrap: Duration | None = c.TLS_BOOTSTRAP_TIMEOUT
    discovery: Duration | None = c.DISCOVERY_TIMEOUT
    upgrade_manifests: Duration | None = c.UPGRADE_MANIFESTS_TIMEOUT

    def __post_init__(self) -> None:
        # An explicit `null` in YAML still gets the default, as SetDefaults_Timeouts does for nil pointers.
        for name in field_names(type(self)):
            if getattr(self, name) is None:
                setattr(self, name, field_default(type(self), name))


# --- bootstrap tokens (bootstraptoken/v1) ---------------------------------------------------------------------------


class BootstrapToken(KubeModel):
    """A bootstrap token to create: `token` is "<id>.<secret>" (generated at runtime when None)."""

    token: str | None = None
    description: str = ""
    ttl: Duration | None = None
    expires: Time | None = None
    usages: list[str] = field(default_factory=lambda: list(DEFAULT_TOKEN_USAGES))
    groups: list[str] = field(default_factory=lambda: list(DEFAULT_TOKEN_GROUPS))

    def __post_init__(self) -> None:
        if self.ttl is None and self.expires is None:
            self.ttl = c.DEFAULT_TOKEN_DURATION
        if not self.usages:
            self.usages = list(DEFAULT_TOKEN_USAGES)
        if not self.groups:
            self.groups = list(DEFAULT_TOKEN_GROUPS)

    @property
    def token_id(self) -> str | None:
        return self.token.split(".", 1)[0] if self.token else None


# --- node registration ----------------------------------------------------------------------------------------------


class NodeRegistrationOptions(KubeModel):
    """How this node registers. `taints=None` means "default" (control-plane taint on control-plane nodes)."""

    _keep = frozenset({"taints"})
    name: str = ""
    cri_socket: str = ""
    taints: list[Taint] | None = None
    kubelet_extra_args: list[Arg] = field(default_factory=list)
    ignore_preflight_errors: list[str] = field(default_factory=list)
    image_pull_policy: str = DEFAULT_IMAGE_PULL_POLICY
    image_pull_serial: bool | None = True

    def __post_init__(self) -> None:
        if not self.image_pull_policy:
            self.image_pull_policy = DEFAULT_IMAGE_PULL_POLICY
        if self.image_pull_serial is None:
            self.image_pull_serial = True


# --- InitConfiguration ----------------------------------------------------------------------------------------------


class InitConfiguration(KubeModel):
    """`kubeadm init`-only settings (never uploaded to the cluster)."""

    api_version: Literal["kubeadm.k8s.io/v1beta4"] = API_VERSION
    kind: Literal["InitConfiguration"] = "InitConfiguration"
    bootstrap_tokens: list[BootstrapToken] = field(default_factory=lambda: [BootstrapToken()])
    dry_run: bool = False
    node_registration: NodeRegistrationOptions = field(default_factory=NodeRegistrationOptions)
    local_api_endpoint: APIEndpoint = field(default_factory=APIEndpoint, name="localAPIEndpoint")
    certificate_key: str = ""
    skip_phases: list[str] = field(default_factory=list)
    patches: Patches | None = None
    timeouts: Timeouts | None = field(default_factory=Timeouts)

    def __post_init__(self) -> None:
        if not self.bootstrap_tokens:
            self.bootstrap_tokens = [BootstrapToken()]
        if self.timeouts is None:
            self.timeouts = Timeouts()
        if not self.local_api_endpoint.bind_port:
            self.local_api_endpoint.bind_port = c.KUBE_APISERVER_PORT


# --- ClusterConfiguration -------------------------------------------------------------------------------------------


class ControlPlaneComponent(KubeModel):
    """extraArgs (list of Arg, overriding kubeadm's flags), extraVolumes, extraEnvs."""

    extra_args: list[Arg] = field(default_factory=list)
    extra_volumes: list[HostPathMount] = field(default_factory=list)
    extra_envs: list[EnvVar] = field(default_factory=list)


class APIServer(ControlPlaneComponent):
    cert_sans: list[str] = field(default_factory=list, name="certSANs")


class DNS(KubeModel):
    image_repository: str = ""
    image_tag: str = ""
    disabled: bool = False


class Proxy(KubeModel):
    disabled: bool = False


class LocalEtcd(KubeModel):
    _keep = frozenset({"data_dir"})
    image_repository: str = ""
    image_tag: str = ""
    data_dir: str = c.DEFAULT_ETCD_DATA_DIR
    extra_args: list[Arg] = field(default_factory=list)
    extra_envs: list[EnvVar] = field(default_factory=list)
    server_cert_sans: list[str] = field(default_factory=list, name="serverCertSANs")
    peer_cert_sans: list[str] = field(default_factory=list, name="peerCertSANs")

    def __post_init__(self) -> None:
        if not self.data_dir:
            self.data_dir = c.DEFAULT_ETCD_DATA_DIR


class ExternalEtcd(KubeModel):
    _keep = frozenset({"endpoints", "ca_file", "cert_file", "key_file"})
    endpoints: list[str] = field(default_factory=list)
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""


class Etcd(KubeModel):
    """Exactly one of `local` / `external`; with neither, `local` is defaulted."""

    local: LocalEtcd | None = None
    external: ExternalEtcd | None = None

    def __post_init__(self) -> None:
        if self.local is None and self.external is None:
            self.local = LocalEtcd()


class Networking(KubeModel):
    service_subnet: str = c.DEFAULT_SERVICE_SUBNET
    pod_subnet: str = ""
    dns_domain: str = c.DEFAULT_DNS_DOMAIN

    def __post_init__(self) -> None:
        if not self.service_subnet:
            self.service_subnet = c.DEFAULT_SERVICE_SUBNET
        if not self.dns_domain:
            self.dns_domain = c.DEFAULT_DNS_DOMAIN


class ClusterConfiguration(KubeModel):
    """Cluster-wide settings; stored in the kubeadm-config ConfigMap."""

    api_version: Literal["kubeadm.k8s.io/v1beta4"] = API_VERSION
    kind: Literal["ClusterConfiguration"] = "ClusterConfiguration"
    etcd: Etcd = field(default_factory=Etcd)
    networking: Networking = field(default_factory=Networking)
    kubernetes_version: str = c.DEFAULT_KUBERNETES_VERSION_LABEL
    control_plane_endpoint: str = ""
    api_server: APIServer = field(default_factory=APIServer)
    controller_manager: ControlPlaneComponent = field(default_factory=ControlPlaneComponent)
    scheduler: ControlPlaneComponent = field(default_factory=ControlPlaneComponent)
    dns: DNS = field(default_factory=DNS)
    proxy: Proxy = field(default_factory=Proxy)
    certificates_dir: str = c.DEFAULT_CERTIFICATES_DIR
    image_repository: str = c.DEFAULT_IMAGE_REPOSITORY
    feature_gates: dict[str, bool] = field(default_factory=dict)
    cluster_name: str = c.DEFAULT_CLUSTER_NAME
    encryption_algorithm: str = c.DEFAULT_ENCRYPTION_ALGORITHM
    certificate_validity_period: Duration | None = c.CERTIFICATE_VALIDITY_PERIOD
    ca_certificate_validity_period: Duration | None = c.CA_CERTIFICATE_VALIDITY_PERIOD

    def __post_init__(self) -> None:
        for name in (
            "kubernetes_version",
            "certificates_dir",
            "image_repository",
            "cluster_name",
            "encryption_algorithm",
            "certificate_validity_period",
            "ca_certificate_validity_period",
        ):
            if not getattr(self, name) and getattr(self, name) != timedelta(0):
                setattr(self, name, field_default(type(self), name))


# --- JoinConfiguration ----------------------------------------------------------------------------------------------


class BootstrapTokenDiscovery(KubeModel):
    _keep = frozenset({"token"})
    token: str = ""
    api_server_endpoint: str = ""
    ca_cert_hashes: list[str] = field(default_factory=list)
    unsafe_skip_ca_verification: bool = field(default=False, name="unsafeSkipCAVerification")


class FileDiscovery(KubeModel):
    _keep = frozenset({"kube_config_path"})
    kube_config_path: str = ""


class Discovery(KubeModel):
    bootstrap_token: BootstrapTokenDiscovery | None = None
    file: FileDiscovery | None = None
    tls_bootstrap_token: str = ""

    def __post_init__(self) -> None:
        if not self.tls_bootstrap_token and self.bootstrap_token is not None:
            self.tls_bootstrap_token = self.bootstrap_token.token
        if self.file is not None and self.file.kube_config_path.startswith("file://"):
            self.file.kube_config_path = self.file.kube_config_path[len("file://") :]


class JoinControlPlane(KubeModel):
    local_api_endpoint: APIEndpoint = field(default_factory=APIEndpoint, name="localAPIEndpoint")
    certificate_key: str = ""

    def __post_init__(self) -> None:
        if not self.local_api_endpoint.bind_port:
            self.local_api_endpoint.bind_port = c.KUBE_APISERVER_PORT


class JoinConfiguration(KubeModel):
    _keep = frozenset({"discovery"})
    api_version: Literal["kubeadm.k8s.io/v1beta4"] = API_VERSION
    kind: Literal["JoinConfiguration"] = "JoinConfiguration"
    dry_run: bool = False
    node_registration: NodeRegistrationOptions = field(default_factory=NodeRegistrationOptions)
    ca_cert_path: str = c.DEFAULT_CERTIFICATES_DIR + "/ca.crt"
    discovery: Discovery = field(default_factory=Discovery)
    control_plane: JoinControlPlane | None = None
    skip_phases: list[str] = field(default_factory=list)
    patches: Patches | None = None
    timeouts: Timeouts | None = field(default_factory=Timeouts)

    def __post_init__(self) -> None:
        if not self.ca_cert_path:
            self.ca_cert_path = c.DEFAULT_CERTIFICATES_DIR + "/ca.crt"
        if self.timeouts is None:
            self.timeouts = Timeouts()


# --- ResetConfiguration ---------------------------------------------------------------------------------------------

UNMOUNT_FLAGS: tuple[str, ...] = ("MNT_FORCE", "MNT_DETACH", "MNT_EXPIRE", "UMOUNT_NOFOLLOW")


class ResetConfiguration(KubeModel):
    api_version: Literal["kubeadm.k8s.io/v1beta4"] = API_VERSION
    kind: Literal["ResetConfiguration"] = "ResetConfiguration"
    cleanup_tmp_dir: bool = False
    certificates_dir: str = c.DEFAULT_CERTIFICATES_DIR
    cri_socket: str = ""
    dry_run: bool = False
    force: bool = False
    ignore_preflight_errors: list[str] = field(default_factory=list)
    skip_phases: list[str] = field(default_factory=list)
    unmount_flags: list[str] = field(default_factory=list)
    timeouts: Timeouts | None = field(default_factory=Timeouts)

    def __post_init__(self) -> None:
        if not self.certificates_dir:
            self.certificates_dir = c.DEFAULT_CERTIFICATES_DIR
        if self.timeouts is None:
            self.timeouts = Timeouts()


# --- UpgradeConfiguration -------------------------------------------------------------------------------------------


class UpgradeApplyConfiguration(KubeModel):
    kubernetes_version: str = ""
    allow_experimental_upgrades: bool | None = None
    allow_rc_upgrades: bool | None = field(default=None, name="allowRCUpgrades")
    certificate_renewal: bool | None = True
    dry_run: bool | None = None
    etcd_upgrade: bool | None = True
    force_upgrade: bool | None = None
    ignore_preflight_errors: list[str] = field(default_factory=list)
    patches: Patches | None = None
    print_config: bool | None = None
    skip_phases: list[str] = field(default_factory=list)
    image_pull_policy: str = DEFAULT_IMAGE_PULL_POLICY
    image_pull_serial: bool | None = True

    _pointer_defaults: ClassVar[dict[str, object]] = {
        "certificate_renewal": True,
        "etcd_upgrade": True,
        "image_pull_serial": True,
    }

    def __post_init__(self) -> None:
        for name, default in self._pointer_defaults.items():
            if getattr(self, name) is None:
                setattr(self, name, default)
        if not self.image_pull_policy:
            self.image_pull_policy = DEFAULT_IMAGE_PULL_POLICY


class UpgradeDiffConfiguration(KubeModel):
    kubernetes_version: str = ""
    context_lines: int = 0


class UpgradeNodeConfiguration(KubeModel):
    certificate_renewal: bool | None = True
    dry_run: bool | None = None
    etcd_upgrade: bool | None = True
    ignore_preflight_errors: list[str] = field(default_factory=list)
    skip_phases: list[str] = field(default_factory=list)
    patches: Patches | None = None
    image_pull_policy: str = DEFAULT_IMAGE_PULL_POLICY
    image_pull_serial: bool | None = True

    def __post_init__(self) -> None:
        for name in ("certificate_renewal", "etcd_upgrade", "image_pull_serial"):
            if getattr(self, name) is None:
                setattr(self, name, True)
        if not self.image_pull_policy:
            self.image_pull_policy = DEFAULT_IMAGE_PULL_POLICY


class UpgradePlanConfiguration(KubeModel):
    kubernetes_version: str = ""
    allow_experimental_upgrades: bool | None = None
    allow_rc_upgrades: bool | None = field(default=None, name="allowRCUpgrades")
    dry_run: bool | None = None
    ignore_preflight_errors: list[str] = field(default_factory=list)
    print_config: bool | None = None
    etcd_upgrade: bool | None = True

    def __post_init__(self) -> None:
        if self.etcd_upgrade is None:
            self.etcd_upgrade = True


class UpgradeConfiguration(KubeModel):
    _keep = frozenset({"apply", "diff", "node", "plan"})
    api_version: Literal["kubeadm.k8s.io/v1beta4"] = API_VERSION
    kind: Literal["UpgradeConfiguration"] = "UpgradeConfiguration"
    apply: UpgradeApplyConfiguration = field(default_factory=UpgradeApplyConfiguration)
    diff: UpgradeDiffConfiguration = field(default_factory=UpgradeDiffConfiguration)
    node: UpgradeNodeConfiguration = field(default_factory=UpgradeNodeConfiguration)
    plan: UpgradePlanConfiguration = field(default_factory=UpgradePlanConfiguration)
    timeouts: Timeouts | None = field(default_factory=Timeouts)

    def __post_init__(self) -> None:
        if self.timeouts is None:
            self.timeouts = Timeouts()


#: kind → model class of this API version.
KINDS: dict[str, type[KubeModel]] = {
    "InitConfiguration": InitConfiguration,
    "ClusterConfiguration": ClusterConfiguration,
    "JoinConfiguration": JoinConfiguration,
    "ResetConfiguration": ResetConfiguration,
    "UpgradeConfiguration": UpgradeConfiguration,
}
