"""Subject-alternative-name rules of kubeadm's certlist: the apiserver and etcd SAN sets, certSANs classification.

Called by pki.certlist (building each cert's config). The host:port and IP parsing helpers live in
`pykubeadm.util.endpoint` and are re-exported here; `parse_host_port` raises ValidationError.
Inputs are explicit values (node name, advertise address, service subnet, ...), never config objects.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Iterable

from pykubeadm.errors import CertError, ValidationError
from pykubeadm.pki.certs import AltNames, IPAddress
from pykubeadm.util import endpoint
from pykubeadm.util.endpoint import is_dns1123_subdomain, is_wildcard_dns1123_subdomain, join_host_port, parse_ip_sloppy

__all__ = [
    "api_server_virtual_ip",
    "apiserver_alt_names",
    "append_sans",
    "etcd_alt_names",
    "is_dns1123_subdomain",
    "is_wildcard_dns1123_subdomain",
    "join_host_port",
    "parse_host_port",
    "parse_ip_sloppy",
]

log = logging.getLogger("pykubeadm.pki")

Warn = Callable[[str], None]


def _default_warn(msg: str) -> None:
    log.warning(msg)


def append_sans(alt: AltNames, sans: Iterable[str], cert_name: str, warn: Warn = _default_warn) -> AltNames:
    """Add user-given SANs: IPs to IPs, DNS-1123 subdomains and wildcards to DNS names, anything else skipped with
    kubeadm's warning."""
    dns, ips = list(alt.dns_names), list(alt.ips)
    for name in sans:
        ip = parse_ip_sloppy(name)
        if ip is not None:
            ips.append(ip)
        elif is_dns1123_subdomain(name) or is_wildcard_dns1123_subdomain(name):
            dns.append(name)
        else:
            warn(
                f"[certificates] WARNING: '{name}' was not added to the '{cert_name}' SAN, because it is not a valid "
                "IP or RFC-1123 compliant DNS entry"
            )
    return AltNames(tuple(dns), tuple(ips))


def api_server_virtual_ip(service_subnet: str) -> IPAddress:
    """The first usable IP of the first service CIDR (`10.96.0.0/12` → `10.96.0.1`)."""
    first = service_subnet.split(",")[0].strip()
    try:
        net = ipaddress.ip_network(first, strict=False)
    except ValueError as err:
        raise CertError(
            f"unable to get first IP address from the given CIDR: {service_subnet}: invalid CIDR address: {first}"
        ) from err
    return net.network_address + 1


def _advertise_ip(advertise_address: str) -> IPAddress:
    ip = parse_ip_sloppy(advertise_address)
    if ip is None:
        raise CertError(
            f"error parsing LocalAPIEndpoint AdvertiseAddress {advertise_address}: is not a valid textual "
            "representation of an IP address"
        )
    return ip


def parse_host_port(hostport: str) -> tuple[str, str]:
    """kubeadmutil.ParseHostPort: (host, port-or-""); the host must be an IP or a DNS-1123 subdomain."""
    try:
        return endpoint.parse_host_port(hostport)
    except ValueError as err:
        raise ValidationError([str(err)]) from err


def apiserver_alt_names(
    node_name: str,
    advertise_address: str,
    service_subnet: str,
    dns_domain: str,
    control_plane_endpoint: str = "",
    cert_sans: Iterable[str] = (),
    warn: Warn = _default_warn,
) -> AltNames:
    """The apiserver serving cert's SANs (GetAPIServerAltNames)."""
    adv = _advertise_ip(advertise_address)
    vip = api_server_virtual_ip(service_subnet)
    dns = [
        node_name,
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        f"kubernetes.default.svc.{dns_domain}",
    ]
    ips: list[IPAddress] = [vip, adv]
    if control_plane_endpoint:
        try:
            host, _ = parse_host_port(control_plane_endpoint)
        except ValidationError as err:
            raise CertError(f"error parsing cluster controlPlaneEndpoint {control_plane_endpoint!r}: {err}") from err
        ip = parse_ip_sloppy(host)
        if ip is not None:
            ips.append(ip)
        else:
            dns.append(host)
    return append_sans(AltNames(tuple(dns), tuple(ips)), cert_sans, "apiserver", warn)


def etcd_alt_names(
    node_name: str,
    advertise_address: str,
    extra_sans: Iterable[str] = (),
    cert_name: str = "etcd/server",
    warn: Warn = _default_warn,
) -> AltNames:
    """etcd server/peer SANs (getAltNames): node name, localhost, advertise address, 127.0.0.1, ::1, plus extras."""
    adv = _advertise_ip(advertise_address)
    base = AltNames((node_name, "localhost"), (adv, ipaddress.IPv4Address("127.0.0.1"), ipaddress.IPv6Address("::1")))
    return append_sans(base, extra_sans, cert_name, warn)
