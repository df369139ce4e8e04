"""The kubeconfig table (kubeadm's getKubeConfigSpecsBase): one frozen spec per file, and API endpoint resolution.

Read by phases/init/kubeconfig.py (one sub-phase per row), kubeconfig.create and pki.renewal. Endpoints follow
kubeadm's GetControlPlaneEndpoint / GetLocalAPIEndpoint: `https://` + JoinHostPort(host, port); the two URL
builders are `pykubeadm.util.endpoint`'s, re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from pykubeadm import constants as c
from pykubeadm.errors import ValidationError
from pykubeadm.util.endpoint import control_plane_endpoint_url, local_api_endpoint_url

__all__ = [
    "ADMIN",
    "CONTROLLER_MANAGER",
    "KUBECONFIG_LIST",
    "KUBELET",
    "SCHEDULER",
    "SUPER_ADMIN",
    "KubeconfigParams",
    "KubeconfigSpec",
    "client_name",
    "control_plane_endpoint_url",
    "local_api_endpoint_url",
    "server_for",
    "spec_by_file",
]


@dataclass(frozen=True)
class KubeconfigParams:
    """The cluster values kubeconfig files depend on (taken from the config by the phase)."""

    node_name: str
    advertise_address: str
    bind_port: int = c.KUBE_APISERVER_PORT
    control_plane_endpoint: str = ""
    cluster_name: str = c.DEFAULT_CLUSTER_NAME
    encryption_algorithm: str = c.DEFAULT_ENCRYPTION_ALGORITHM
    certificate_validity_period: timedelta = c.CERTIFICATE_VALIDITY_PERIOD
    #: Feature gate ControlPlaneKubeletLocalMode (beta, on by default in 1.33): kubelet.conf uses the local endpoint.
    kubelet_local_mode: bool = True


@dataclass(frozen=True)
class KubeconfigSpec:
    """One kubeconfig file: phase name, help, file name, client (CN; `{node}` = node name), groups (O), endpoint."""

    name: str
    short: str
    file_name: str
    client: str
    organizations: tuple[str, ...] = ()
    #: "control-plane" (controlPlaneEndpoint), "local" (advertise address) or "kubelet" (local in local mode)
    endpoint: str = "control-plane"
    #: renewal long name (certs renew / check-expiration); empty = not renewable (kubelet.conf)
    renew_long_name: str = ""
    #: the phase's long help
    long: str = ""


ADMIN = KubeconfigSpec(
    "admin",
    "Generate a kubeconfig file for the admin to use and for kubeadm itself",
    c.ADMIN_KUBECONFIG_FILE,
    c.ADMIN_USER,
    (c.CLUSTER_ADMINS_GROUP_AND_CLUSTER_ROLE_BINDING,),
    renew_long_name="certificate embedded in the kubeconfig file for the admin to use and for kubeadm itself",
    long="Generate the kubeconfig file for the admin and for kubeadm itself, and save it to admin.conf file.",
)
SUPER_ADMIN = KubeconfigSpec(
    "super-admin",
    "Generate a kubeconfig file for the super-admin",
    c.SUPER_ADMIN_KUBECONFIG_FILE,
    c.SUPER_ADMIN_USER,
    (c.SYSTEM_PRIVILEGED_GROUP,),
    renew_long_name="certificate embedded in the kubeconfig file for the super-admin",
    long="Generate a kubeconfig file for the super-admin, and save it to super-admin.conf file.",
)
KUBELET = KubeconfigSpec(
    "kubelet",
    "Generate a kubeconfig file for the kubelet to use *only* for cluster bootstrapping purposes",
    c.KUBELET_KUBECONFIG_FILE,
    c.NODES_USER_PREFIX + "{node}",
    (c.NODES_GROUP,),
    endpoint="kubelet",
    long="Generate the kubeconfig file for the kubelet to use and save it to kubelet.conf file.\n\n"
    "Please note that this should *only* be used for cluster bootstrapping purposes. After your control plane is up,\n"
    "you should request all kubelet credentials from the CSR API.",
)
CONTROLLER_MANAGER = KubeconfigSpec(
    "controller-manager",
    "Generate a kubeconfig file for the controller manager to use",
    c.CONTROLLER_MANAGER_KUBECONFIG_FILE,
    c.CONTROLLER_MANAGER_USER,
    endpoint="local",
    renew_long_name="certificate embedded in the kubeconfig file for the controller manager to use",
    long="Generate the kubeconfig file for the controller manager to use and save it to controller-manager.conf file",
)
SCHEDULER = KubeconfigSpec(
    "scheduler",
    "Generate a kubeconfig file for the scheduler to use",
    c.SCHEDULER_KUBECONFIG_FILE,
    c.SCHEDULER_USER,
    endpoint="local",
    renew_long_name="certificate embedded in the kubeconfig file for the scheduler manager to use",
    long="Generate the kubeconfig file for the scheduler to use and save it to scheduler.conf file.",
)

#: The files `init phase kubeconfig` writes, in order.
KUBECONFIG_LIST: tuple[KubeconfigSpec, ...] = (ADMIN, SUPER_ADMIN, KUBELET, CONTROLLER_MANAGER, SCHEDULER)


def spec_by_file(file_name: str) -> KubeconfigSpec:
    for s in KUBECONFIG_LIST:
        if s.file_name == file_name:
            return s
    raise ValidationError([f"unknown kubeconfig file {file_name!r}"])


def client_name(spec: KubeconfigSpec, node_name: str) -> str:
    return spec.client.replace("{node}", node_name)


def server_for(spec: KubeconfigSpec, params: KubeconfigParams) -> str:
    """The API server URL a file points at."""
    local = spec.endpoint == "local" or (spec.endpoint == "kubelet" and params.kubelet_local_mode)
    if local:
        return local_api_endpoint_url(params.advertise_address, params.bind_port)
    return control_plane_endpoint_url(params.control_plane_endpoint, params.advertise_address, params.bind_port)
