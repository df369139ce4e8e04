"""Addresses derived from the configuration: the API server's service VIP, the cluster DNS IP, the control-plane
endpoint URL (kubeadm's GetControlPlaneEndpoint, fact sheet §3.3) and the local API endpoint URL.

The URL rules themselves live in `pykubeadm.util.endpoint` (shared with kubeconfig.specs); these take config models."""

from __future__ import annotations

import ipaddress

from pykubeadm.api.v1beta4 import APIEndpoint, ClusterConfiguration, InitConfiguration
from pykubeadm.util import endpoint as endpoint_util

__all__ = [
    "api_server_service_ip",
    "control_plane_endpoint_url",
    "dns_service_ip",
    "endpoint_url",
    "indexed_ip",
    "local_api_endpoint_url",
]


def indexed_ip(subnets: str, index: int) -> str:
    """The `index`-th address of the first CIDR in a comma-separated list (`10.96.0.0/12`, 1 → `10.96.0.1`)."""
    first = subnets.split(",")[0].strip()
    try:
        net = ipaddress.ip_network(first, strict=False)
    except ValueError as e:
        raise ValueError(f'couldn\'t parse service subnet CIDR "{first}": {e}') from None
    if index >= net.num_addresses:
        raise ValueError(f"can't generate IP with index {index} from subnet. subnet too small. subnet: {first}")
    return str(net.network_address + index)


def api_server_service_ip(cluster: ClusterConfiguration) -> str:
    """1st IP of the (first) service subnet: the `kubernetes` Service VIP (10.96.0.1)."""
    return indexed_ip(cluster.networking.service_subnet, 1)


def dns_service_ip(cluster: ClusterConfiguration) -> str:
    """10th IP of the (first) service subnet: the cluster DNS Service IP (10.96.0.10)."""
    return indexed_ip(cluster.networking.service_subnet, 10)


def endpoint_url(endpoint: APIEndpoint) -> str:
    """`https://<advertiseAddress>:<bindPort>` (IPv6 bracketed)."""
    return endpoint_util.local_api_endpoint_url(endpoint.advertise_address, endpoint.bind_port)


def local_api_endpoint_url(init: InitConfiguration) -> str:
    return endpoint_url(init.local_api_endpoint)


def control_plane_endpoint_url(init: InitConfiguration | APIEndpoint, cluster: ClusterConfiguration) -> str:
    """controlPlaneEndpoint as a URL (port defaults to the bind port), else the local API endpoint URL."""
    local = init if isinstance(init, APIEndpoint) else init.local_api_endpoint
    return endpoint_util.control_plane_endpoint_url(
        cluster.control_plane_endpoint, local.advertise_address, local.bind_port
    )
