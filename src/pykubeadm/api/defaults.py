"""Dynamic ("runtime") defaults of the config API, as kubeadm's SetInitDynamicDefaults / SetJoinDynamicDefaults do:
generated bootstrap tokens, node name (lower-cased hostname), CRI socket detection, the control-plane taint, the
advertise address (IP of the default-route interface), controlPlaneEndpoint port, lower-cased SANs and the resolved
kubernetesVersion. Static defaults are the models' field defaults (`pykubeadm.api.v1beta4`).

Advertise-address detection reads /proc/net/route (then /proc/net/ipv6_route). Where there is no default route it
falls back to the first non-loopback IPv4 address, and on a loopback-only machine to 127.0.0.1 (with a warning);
kubeadm itself would fail or use 0.0.0.0 there, which is useless for a single-machine cluster.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import logging
import os
import socket
import stat
import struct
from collections.abc import Callable
from pathlib import Path

from pykubeadm import constants as c
from pykubeadm.api import versions
from pykubeadm.api.v1beta4 import (
    APIEndpoint,
    ClusterConfiguration,
    InitConfiguration,
    JoinConfiguration,
    NodeRegistrationOptions,
    ResetConfiguration,
    Taint,
)
from pykubeadm.bootstrap.token import generate_token
from pykubeadm.errors import KubeadmError, ValidationError
from pykubeadm.util.endpoint import join_host_port, parse_host_port

__all__ = [
    "CONTROL_PLANE_TAINT",
    "detect_advertise_address",
    "detect_cri_socket",
    "get_hostname",
    "set_api_endpoint_dynamic_defaults",
    "set_cluster_dynamic_defaults",
    "set_init_dynamic_defaults",
    "set_join_dynamic_defaults",
    "set_node_registration_dynamic_defaults",
    "set_reset_dynamic_defaults",
]

log = logging.getLogger(__name__)

CONTROL_PLANE_TAINT = Taint(key=c.TAINT_CONTROL_PLANE_KEY, effect="NoSchedule")
_SIOCGIFADDR = 0x8915
_CRI_URL_SCHEME = "unix"


# --- host facts -----------------------------------------------------------------------------------------------------


def get_hostname(override: str = "") -> str:
    """kubeadm's GetHostname: the override or os hostname, trimmed and lower-cased."""
    name = (override or socket.gethostname()).strip()
    if not name:
        raise KubeadmError("empty hostname is invalid")
    return name.lower()


def _iface_ipv4(iface: str) -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            res = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", iface[:15].encode()))
        return socket.inet_ntoa(res[20:24])
    except OSError:
        return None


def _iface_ipv6_global(iface: str, if_inet6: Path = Path("/proc/net/if_inet6")) -> str | None:
    with contextlib.suppress(OSError):
        for line in if_inet6.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 6 and parts[5] == iface and parts[3] == "00":  # scope global
                addr = ipaddress.IPv6Address(bytes.fromhex(parts[0]))
                if addr.is_global or addr.is_private:
                    return str(addr)
    return None


def _default_route_iface(route_file: Path = Path("/proc/net/route")) -> str | None:
    best: tuple[int, str] | None = None
    with contextlib.suppress(OSError):
        for line in route_file.read_text().splitlines()[1:]:
            f = line.split()
            if len(f) < 8:
                continue
            iface, dest, flags, metric, mask = f[0], f[1], int(f[3], 16), int(f[6]), f[7]
            is_default = dest == "00000000" and mask == "00000000" and flags & 0x1
            if is_default and (best is None or metric < best[0]):
                best = (metric, iface)
    return best[1] if best else None


def _default_route_iface_v6(route_file: Path = Path("/proc/net/ipv6_route")) -> str | None:
    with contextlib.suppress(OSError):
        for line in route_file.read_text().splitlines():
            f = line.split()
            if len(f) >= 10 and f[0] == "0" * 32 and f[1] == "00" and f[9] != "lo" and int(f[8], 16) & 0x1:
                return f[9]
    return None


def detect_advertise_address() -> str:
    """The IP of the interface holding the default route (IPv4 first, then IPv6); fallbacks as in the module doc."""
    iface = _default_route_iface()
    if iface:
        ip = _iface_ipv4(iface)
        if ip:
            return ip
    iface6 = _default_route_iface_v6()
    if iface6:
        ip = _iface_ipv6_global(iface6)
        if ip:
            return ip
    with contextlib.suppress(OSError):
        for _, name in socket.if_nameindex():
            ip = _iface_ipv4(name)
            if ip and not ipaddress.ip_address(ip).is_loopback:
                log.warning("could not find a default route; using the address %s of interface %s", ip, name)
                return ip
    log.warning(
        "WARNING: could not obtain a bind address for the API Server: no default routes found in "
        '"/proc/net/route" or "/proc/net/ipv6_route"; using: 127.0.0.1 (a loopback-only machine: '
        "other nodes will not be able to reach this API server)"
    )
    return "127.0.0.1"


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def detect_cri_socket(is_socket: Callable[[str], bool] = _is_socket) -> str:
    """kubeadm's DetectCRISocket: the one known CRI socket present, the default when none, an error when several."""
    found = [url for url in c.KNOWN_CRI_SOCKETS if is_socket(url.removeprefix("unix://"))]
    if len(found) > 1:
        raise KubeadmError(
            "found multiple CRI endpoints on the host. Please define which one do you wish to use by setting the "
            f"'criSocket' field in the kubeadm configuration file: {', '.join(found)}"
        )
    return found[0] if found else c.DEFAULT_CRI_SOCKET


# --- setting dynamic defaults ---------------------------------------------------------------------------------------


def set_node_registration_dynamic_defaults(
    nr: NodeRegistrationOptions,
    *,
    control_plane_taint: bool,
    detect_cri: Callable[[], str] | None = None,
) -> None:
    nr.name = get_hostname(nr.name)
    if control_plane_taint and nr.taints is None:
        nr.taints = [CONTROL_PLANE_TAINT.copy()]
    if not nr.cri_socket:
        nr.cri_socket = (detect_cri or detect_cri_socket)()
        log.debug("detected and using CRI socket: %s", nr.cri_socket)
    elif "://" not in nr.cri_socket:
        log.warning(
            "Usage of CRI endpoints without URL scheme is deprecated and can cause kubelet errors in the future. "
            'Automatically prepending scheme "unix" to the "criSocket" with value "%s". Please update your '
            "configuration!",
            nr.cri_socket,
        )
        nr.cri_socket = f"{_CRI_URL_SCHEME}://{nr.cri_socket}"


def set_api_endpoint_dynamic_defaults(
    endpoint: APIEndpoint, *, detect_address: Callable[[], str] | None = None
) -> None:
    """Detect the advertise address when it is empty or unspecified (0.0.0.0 / ::)."""
    addr = endpoint.advertise_address
    ip = None
    if addr:
        try:
            ip = ipaddress.ip_address(addr)
        except ValueError:
            raise ValidationError(
                [f'couldn\'t use "{addr}" as "apiserver-advertise-address", must be ipv4 or ipv6 address']
            ) from None
    if ip is None or ip.is_unspecified:
        endpoint.advertise_address = (detect_address or detect_advertise_address)()


def set_cluster_dynamic_defaults(
    cluster: ClusterConfiguration, local: APIEndpoint, *, resolve_version: bool = True
) -> None:
    """Resolve kubernetesVersion, add the bind port to a port-less controlPlaneEndpoint, lower-case the API server SANs."""
    if resolve_version:
        try:
            cluster.kubernetes_version = versions.resolve_kubernetes_version(cluster.kubernetes_version)
            versions.check_minimum_control_plane_version(cluster.kubernetes_version)
        except ValueError as e:
            raise ValidationError([str(e)]) from None
    if cluster.control_plane_endpoint:
        try:
            host, port = parse_host_port(cluster.control_plane_endpoint)
        except ValueError:
            host, port = (
                "",
                "invalid",
            )  # left as is: validation reports "controlPlaneEndpoint: ... endpoint is not valid"
        if not port:
            cluster.control_plane_endpoint = join_host_port(host, local.bind_port)
    cluster.api_server.cert_sans = [san.lower() for san in cluster.api_server.cert_sans]
    if cluster.feature_gates.get("PublicKeysECDSA") and cluster.encryption_algorithm == c.DEFAULT_ENCRYPTION_ALGORITHM:
        # the deprecated gate still selects ECDSA keys, as kubeadm's EncryptionAlgorithmType() does
        cluster.encryption_algorithm = "ECDSA-P256"


def set_init_dynamic_defaults(
    init: InitConfiguration,
    cluster: ClusterConfiguration,
    *,
    detect_address: Callable[[], str] | None = None,
    detect_cri: Callable[[], str] | None = None,
    resolve_version: bool = True,
) -> None:
    """kubeadm's SetInitDynamicDefaults, in its order: tokens, node registration, API endpoint, cluster."""
    for bt in init.bootstrap_tokens:
        if not bt.token:
            bt.token = generate_token()
    set_node_registration_dynamic_defaults(init.node_registration, control_plane_taint=True, detect_cri=detect_cri)
    set_api_endpoint_dynamic_defaults(init.local_api_endpoint, detect_address=detect_address)
    set_cluster_dynamic_defaults(cluster, init.local_api_endpoint, resolve_version=resolve_version)


def set_join_dynamic_defaults(
    join: JoinConfiguration,
    *,
    detect_address: Callable[[], str] | None = None,
    detect_cri: Callable[[], str] | None = None,
) -> None:
    """kubeadm's SetJoinDynamicDefaults: node registration (taint only for control-plane joins), the local endpoint."""
    set_node_registration_dynamic_defaults(
        join.node_registration, control_plane_taint=join.control_plane is not None, detect_cri=detect_cri
    )
    if join.control_plane is not None:
        set_api_endpoint_dynamic_defaults(join.control_plane.local_api_endpoint, detect_address=detect_address)


def set_reset_dynamic_defaults(reset: ResetConfiguration, *, detect_cri: Callable[[], str] | None = None) -> None:
    if not reset.cri_socket:
        reset.cri_socket = (detect_cri or detect_cri_socket)()
    elif "://" not in reset.cri_socket:
        reset.cri_socket = f"{_CRI_URL_SCHEME}://{reset.cri_socket}"
