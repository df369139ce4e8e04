"""host:port parsing and API server URLs (kubeadm's util/endpoint.go); the one copy behind config defaulting and
validation (api), SANs (pki.altnames), kubeconfig servers (kubeconfig.specs), manifests and addons.

Inputs are plain strings and ints, never config objects. `split_host_port` / `join_host_port` are Go's
net.SplitHostPort / JoinHostPort; `parse_host_port` is kubeadm's ParseHostPort (ValueError); the URL builders are
GetLocalAPIEndpoint / GetControlPlaneEndpoint (ValidationError, with kubeadm's messages).
"""

from __future__ import annotations

import ipaddress
import logging
import re

from pykubeadm.errors import ValidationError

__all__ = [
    "control_plane_endpoint_url",
    "is_dns1123_subdomain",
    "is_ipv6",
    "is_wildcard_dns1123_subdomain",
    "join_host_port",
    "local_api_endpoint_url",
    "loopback_for",
    "parse_host_port",
    "parse_ip_sloppy",
    "split_host_port",
    "valid_port",
]

log = logging.getLogger(__name__)

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_WILDCARD_DNS1123 = re.compile(rf"^\*\.{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_SLOPPY_V4 = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$")


def parse_ip_sloppy(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """Parse an IP like k8s.io/utils/net.ParseIPSloppy (IPv4 octets may have leading zeros); None if not an IP."""
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    m = _SLOPPY_V4.match(text)
    if m and all(int(g) <= 255 for g in m.groups()):
        return ipaddress.IPv4Address(".".join(str(int(g)) for g in m.groups()))
    return None


def is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(_DNS1123_SUBDOMAIN.match(value))


def is_wildcard_dns1123_subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(_WILDCARD_DNS1123.match(value))


def split_host_port(hostport: str) -> tuple[str, str]:
    """Go's net.SplitHostPort; ValueError with Go's message when there is no port or bad brackets."""
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise ValueError(f"address {hostport}: missing ']' in address")
        host, rest = hostport[1:end], hostport[end + 1 :]
        if not rest.startswith(":"):
            raise ValueError(f"address {hostport}: missing port in address")
        return host, rest[1:]
    if ":" not in hostport:
        raise ValueError(f"address {hostport}: missing port in address")
    host, _, port = hostport.rpartition(":")
    if ":" in host:
        raise ValueError(f"address {hostport}: too many colons in address")
    return host, port


def is_ipv6(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).version == 6
    except ValueError:
        return False


def loopback_for(address: str) -> str:
    """The loopback address of `address`'s family: `::1` for an IPv6 address, else `127.0.0.1`."""
    return "::1" if is_ipv6(address) else "127.0.0.1"


def join_host_port(host: str, port: int | str) -> str:
    """Go's net.JoinHostPort: IPv6 hosts are bracketed."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def valid_port(port: str) -> bool:
    return port.isdigit() and 1 <= int(port) <= 65535


def parse_host_port(hostport: str) -> tuple[str, str]:
    """kubeadm's ParseHostPort: `host[:port]` → (host, port-or-""); host must be an IP or a DNS-1123 subdomain,
    port 1–65535; ValueError otherwise."""
    try:
        host, port = split_host_port(hostport)
    except ValueError:
        host, port = hostport, ""
    if port and not valid_port(port):
        raise ValueError(f"hostport {hostport}: port {port} must be a valid number between 1 and 65535, inclusive")
    if parse_ip_sloppy(host) is not None or is_dns1123_subdomain(host):
        return host, port
    raise ValueError(f"hostport {hostport}: host '{host}' must be a valid IP address or a valid RFC-1123 DNS subdomain")


def local_api_endpoint_url(advertise_address: str, bind_port: int) -> str:
    """`https://<advertiseAddress>:<bindPort>` (IPv6 bracketed)."""
    if not 1 <= int(bind_port) <= 65535:
        raise ValidationError(
            [
                f'invalid value "{bind_port}" given for api.bindPort: port must be a valid number between 1 and 65535, inclusive'
            ]
        )
    ip = parse_ip_sloppy(advertise_address)
    if ip is None:
        raise ValidationError([f"invalid value `{advertise_address}` given for api.advertiseAddress"])
    return "https://" + join_host_port(str(ip), bind_port)


def control_plane_endpoint_url(control_plane_endpoint: str, advertise_address: str, bind_port: int) -> str:
    """controlPlaneEndpoint as a URL (its port, else bindPort), or the local endpoint when it is empty."""
    local = local_api_endpoint_url(advertise_address, bind_port)
    if not control_plane_endpoint:
        return local
    try:
        host, port = parse_host_port(control_plane_endpoint)
    except ValueError as err:
        raise ValidationError(
            [f'invalid value "{control_plane_endpoint}" given for controlPlaneEndpoint: {err}']
        ) from err
    if port:
        if port != str(bind_port):
            log.warning(
                "[endpoint] WARNING: port specified in controlPlaneEndpoint overrides bindPort in the controlplane address"
            )
    else:
        port = str(bind_port)
    return "https://" + join_host_port(host, port)
