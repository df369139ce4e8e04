"""The deprecated `kubeadm.k8s.io/v1beta3` API: read-only models and their conversion to v1beta4.

Differences handled by the conversion (as kubeadm's v1beta3 conversion does):
* `extraArgs` / `kubeletExtraArgs` were maps; they become lists of Arg sorted by name;
* `apiServer.timeoutForControlPlane` moves to InitConfiguration `timeouts.controlPlaneComponentHealthCheck`;
* `discovery.timeout` moves to JoinConfiguration `timeouts.discovery`;
* Reset/Upgrade configurations did not exist in v1beta3.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pykubeadm import constants as c
from pykubeadm.api import v1beta4
from pykubeadm.api._base import Duration, KubeModel, field

__all__ = [
    "API_VERSION",
    "KINDS",
    "ClusterConfiguration",
    "InitConfiguration",
    "JoinConfiguration",
    "convert_cluster",
    "convert_init",
    "convert_join",
]

API_VERSION: Final = c.KUBEADM_OLD_API_VERSION


class ControlPlaneComponent(KubeModel):
    extra_args: dict[str, str] = field(default_factory=dict)
    extra_volumes: list[v1beta4.HostPathMount] = field(default_factory=list)


class APIServer(ControlPlaneComponent):
    cert_sans: list[str] = field(default_factory=list, name="certSANs")
    timeout_for_control_plane: Duration | None = None


class DNS(KubeModel):
    image_repository: str = ""
    image_tag: str = ""


class LocalEtcd(KubeModel):
    image_repository: str = ""
    image_tag: str = ""
    data_dir: str = ""
    extra_args: dict[str, str] = field(default_factory=dict)
    server_cert_sans: list[str] = field(default_factory=list, name="serverCertSANs")
    peer_cert_sans: list[str] = field(default_factory=list, name="peerCertSANs")


class Etcd(KubeModel):
    local: LocalEtcd | None = None
    external: v1beta4.ExternalEtcd | None = None


class ClusterConfiguration(KubeModel):
    api_version: Literal["kubeadm.k8s.io/v1beta3"] = API_VERSION
    kind: Literal["ClusterConfiguration"] = "ClusterConfiguration"
    etcd: Etcd = field(default_factory=Etcd)
    networking: v1beta4.Networking = field(default_factory=v1beta4.Networking)
    kubernetes_version: str = ""
    control_plane_endpoint: str = ""
    api_server: APIServer = field(default_factory=APIServer)
    controller_manager: ControlPlaneComponent = field(default_factory=ControlPlaneComponent)
    scheduler: ControlPlaneComponent = field(default_factory=ControlPlaneComponent)
    dns: DNS = field(default_factory=DNS)
    certificates_dir: str = ""
    image_repository: str = ""
    feature_gates: dict[str, bool] = field(default_factory=dict)
    cluster_name: str = ""


class NodeRegistrationOptions(KubeModel):
    name: str = ""
    cri_socket: str = ""
    taints: list[v1beta4.Taint] | None = None
    kubelet_extra_args: dict[str, str] = field(default_factory=dict)
    ignore_preflight_errors: list[str] = field(default_factory=list)
    image_pull_policy: str = ""


class InitConfiguration(KubeModel):
    api_version: Literal["kubeadm.k8s.io/v1beta3"] = API_VERSION
    kind: Literal["InitConfiguration"] = "InitConfiguration"
    bootstrap_tokens: list[v1beta4.BootstrapToken] = field(default_factory=list)
    node_registration: NodeRegistrationOptions = field(default_factory=NodeRegistrationOptions)
    local_api_endpoint: v1beta4.APIEndpoint = field(default_factory=v1beta4.APIEndpoint, name="localAPIEndpoint")
    certificate_key: str = ""
    skip_phases: list[str] = field(default_factory=list)
    patches: v1beta4.Patches | None = None


class BootstrapTokenDiscovery(KubeModel):
    token: str = ""
    api_server_endpoint: str = ""
    ca_cert_hashes: list[str] = field(default_factory=list)
    unsafe_skip_ca_verification: bool = field(default=False, name="unsafeSkipCAVerification")


class Discovery(KubeModel):
    bootstrap_token: BootstrapTokenDiscovery | None = None
    file: v1beta4.FileDiscovery | None = None
    tls_bootstrap_token: str = ""
    timeout: Duration | None = None


class JoinControlPlane(KubeModel):
    local_api_endpoint: v1beta4.APIEndpoint = field(default_factory=v1beta4.APIEndpoint, name="localAPIEndpoint")
    certificate_key: str = ""


class JoinConfiguration(KubeModel):
    api_version: Literal["kubeadm.k8s.io/v1beta3"] = API_VERSION
    kind: Literal["JoinConfiguration"] = "JoinConfiguration"
    node_registration: NodeRegistrationOptions = field(default_factory=NodeRegistrationOptions)
    ca_cert_path: str = ""
    discovery: Discovery = field(default_factory=Discovery)
    control_plane: JoinControlPlane | None = None
    skip_phases: list[str] = field(default_factory=list)
    patches: v1beta4.Patches | None = None


KINDS: dict[str, type[KubeModel]] = {
    "InitConfiguration": InitConfiguration,
    "ClusterConfiguration": ClusterConfiguration,
    "JoinConfiguration": JoinConfiguration,
}


# --- conversion -----------------------------------------------------------------------------------------------------


def _args(m: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": m[k]} for k in sorted(m)]


def _body(model: KubeModel, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """The model's fields by YAML name, without apiVersion/kind and the named keys."""
    obj = model.to_obj()
    for key in ("apiVersion", "kind", *drop):
        obj.pop(key, None)
    return obj


def _component(comp: ControlPlaneComponent | LocalEtcd, target: dict[str, Any]) -> None:
    """The v1beta4 `extraArgs` (a list of name/value) of a component's v1beta3 map."""
    target.pop("extraArgs", None)
    if comp.extra_args:
        target["extraArgs"] = _args(comp.extra_args)


def _node_registration(nr: NodeRegistrationOptions) -> dict[str, Any]:
    out = nr.to_obj()
    out.pop("kubeletExtraArgs", None)
    if nr.kubelet_extra_args:
        out["kubeletExtraArgs"] = _args(nr.kubelet_extra_args)
    out["taints"] = None if nr.taints is None else [t.to_obj() for t in nr.taints]
    return out


def convert_cluster(old: ClusterConfiguration) -> v1beta4.ClusterConfiguration:
    """v1beta3 → v1beta4 ClusterConfiguration (the timeoutForControlPlane is returned by `control_plane_timeout`)."""
    body = _body(old)
    api = body.setdefault("apiServer", {})
    api.pop("timeoutForControlPlane", None)
    _component(old.api_server, api)
    for name, comp in (("controllerManager", old.controller_manager), ("scheduler", old.scheduler)):
        _component(comp, body.setdefault(name, {}))
    if old.etcd.local is not None:
        _component(old.etcd.local, body["etcd"]["local"])
    if old.feature_gates.get("PublicKeysECDSA"):
        # v1beta3 selected ECDSA keys with this (deprecated) gate; v1beta4 has encryptionAlgorithm
        body["encryptionAlgorithm"] = "ECDSA-P256"
    return v1beta4.ClusterConfiguration.from_obj(body)


def control_plane_timeout(old: ClusterConfiguration) -> Any:
    """The v1beta3 `apiServer.timeoutForControlPlane`, or None."""
    return old.api_server.timeout_for_control_plane


def convert_init(old: InitConfiguration, cluster: ClusterConfiguration | None = None) -> v1beta4.InitConfiguration:
    """v1beta3 → v1beta4 InitConfiguration; `cluster` supplies timeoutForControlPlane if present."""
    body = _body(old)
    body["nodeRegistration"] = _node_registration(old.node_registration)
    new = v1beta4.InitConfiguration.from_obj(body)
    if cluster is not None and cluster.api_server.timeout_for_control_plane is not None:
        assert new.timeouts is not None
        new.timeouts.control_plane_component_health_check = cluster.api_server.timeout_for_control_plane
    return new


def convert_join(old: JoinConfiguration) -> v1beta4.JoinConfiguration:
    """v1beta3 → v1beta4 JoinConfiguration (`discovery.timeout` → `timeouts.discovery`)."""
    body = _body(old)
    body["nodeRegistration"] = _node_registration(old.node_registration)
    body.get("discovery", {}).pop("timeout", None)
    new = v1beta4.JoinConfiguration.from_obj(body)
    if old.discovery.timeout is not None:
        assert new.timeouts is not None
        new.timeouts.discovery = old.discovery.timeout
    return new
