"""Validation of the config API (kubeadm's validation.go): every problem as a FieldError with kubeadm's field path and
message, collected into one list. `validate_*` return the list; `check_*` raise ValidationError when it is not empty.
Also: kubeadm's rule for mixing `--config` with flags, and the `--ignore-preflight-errors` check.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Iterable, Sequence
from urllib.parse import urlparse

from pykubeadm import constants as c
from pykubeadm.api import features
from pykubeadm.api.fieldchecks import (
    GoValue,
    dns1123_subdomain_errors,
    is_abs,
    is_ip,
    parse_cidrs,
    range_size,
    valid_image_reference,
    wildcard_dns1123_subdomain_errors,
)
from pykubeadm.api.flags import check_mixed_arguments, mixed_arguments_error, validate_ignore_preflight_errors
from pykubeadm.api.v1beta4 import (
    UNMOUNT_FLAGS,
    APIEndpoint,
    Arg,
    BootstrapToken,
    ClusterConfiguration,
    Discovery,
    Etcd,
    InitConfiguration,
    JoinConfiguration,
    NodeRegistrationOptions,
    ResetConfiguration,
    UpgradeConfiguration,
)
from pykubeadm.bootstrap.token import is_valid_token
from pykubeadm.errors import FieldError, ValidationError
from pykubeadm.util.endpoint import parse_host_port, split_host_port

__all__ = [
    "GoValue",
    "check_mixed_arguments",
    "dns1123_subdomain_errors",
    "mixed_arguments_error",
    "validate_bootstrap_tokens",
    "validate_cluster",
    "validate_ignore_preflight_errors",
    "validate_init",
    "validate_join",
    "validate_reset",
    "validate_upgrade",
]

log = logging.getLogger(__name__)

Errors = list[FieldError]


# (string checks live in pykubeadm.api.fieldchecks)

# --- building blocks ------------------------------------------------------------------------------------------------


def _invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(path, value, detail)


def validate_absolute_path(path: str, fld: str) -> Errors:
    return [] if is_abs(path) else [_invalid(fld, path, "path is not absolute")]


def validate_cert_sans(sans: Iterable[str], fld: str) -> Errors:
    out = []
    for san in sans:
        errs = dns1123_subdomain_errors(san)
        if errs:
            errs2 = wildcard_dns1123_subdomain_errors(san)
            if errs2 and not is_ip(san):
                out.append(
                    _invalid(
                        fld,
                        san,
                        "altname is not a valid IP address, DNS label or a DNS label with subdomain wildcards: "
                        f"{'; '.join(errs)}; {'; '.join(errs2)}",
                    )
                )
    return out


def validate_extra_args(args: Sequence[Arg], fld: str) -> Errors:
    return [_invalid(fld, f"index {i}", "argument has no name") for i, a in enumerate(args) if not a.name]


def validate_image_repository(repo: str, fld: str) -> Errors:
    if not valid_image_reference(f"{repo}/name:tag"):
        return [_invalid(fld, repo, "invalid image repository format")]
    return []


def validate_image_pull_policy(policy: str, fld: str) -> Errors:
    if policy in ("", "Always", "IfNotPresent", "Never"):
        return []
    return [_invalid(fld, policy, "invalid pull policy")]


def validate_socket_path(socket: str, fld: str) -> Errors:
    if not socket:
        return [_invalid(fld, socket, "empty CRI socket")]
    scheme = urlparse(socket).scheme
    if scheme != "unix":
        return [_invalid(fld, socket, f'only URL scheme "unix" is supported, got "{scheme}"')]
    return []


def validate_api_endpoint(ep: APIEndpoint, fld: str) -> Errors:
    out = []
    if not is_ip(ep.advertise_address):
        out.append(_invalid(f"{fld}.advertiseAddress", ep.advertise_address, "ip address is not valid"))
    if not 1 <= ep.bind_port <= 65535:
        out.append(_invalid(f"{fld}.bindPort", ep.bind_port, "port number is not valid"))
    return out


def validate_certificate_key(key: str, fld: str) -> Errors:
    if not key:
        return []
    try:
        if len(key) % 2:
            raise ValueError("odd length hex string")
        decoded = bytes.fromhex(key)
    except ValueError as e:
        detail = "encoding/hex: odd length hex string" if "odd" in str(e) else "encoding/hex: invalid byte"
        return [_invalid(fld, key, f"certificate key decoding error: {detail}")]
    if len(decoded) != c.CERTIFICATE_KEY_SIZE:
        return [
            _invalid(
                fld,
                key,
                f"invalid certificate key size {len(decoded)}, the key must be an AES key of size "
                f"{c.CERTIFICATE_KEY_SIZE}",
            )
        ]
    return []


def validate_token(token: str, fld: str) -> Errors:
    return [] if is_valid_token(token) else [_invalid(fld, token, "the bootstrap token is invalid")]


_KNOWN_USAGES = ("signing", "authentication")
_GROUP_PATTERN = r"\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z"
_GROUP_RE = re.compile(r"\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\Z")


def validate_token_usages(usages: Sequence[str], fld: str) -> Errors:
    invalid = sorted({u for u in usages if u not in _KNOWN_USAGES})
    if invalid:
        return [
            _invalid(
                fld,
                GoValue(list(usages)),
                f"invalid bootstrap token usage string: {','.join(invalid)}, valid usage options: "
                f"{','.join(_KNOWN_USAGES)}",
            )
        ]
    return []


def validate_token_groups(usages: Sequence[str], groups: Sequence[str], fld: str) -> Errors:
    out = []
    if groups and "authentication" not in usages:
        out.append(
            _invalid(
                fld, GoValue(list(groups)), 'token groups cannot be specified unless --usages includes "authentication"'
            )
        )
    for g in groups:
        if not _GROUP_RE.match(g):
            out.append(
                _invalid(fld, GoValue(list(groups)), f'bootstrap group "{g}" is invalid (must match {_GROUP_PATTERN})')
            )
    return out


def validate_bootstrap_tokens(tokens: Sequence[BootstrapToken], fld: str = "bootstrapTokens") -> Errors:
    out: Errors = []
    for i, bt in enumerate(tokens):
        p = f"{fld}[{i}]"
        out += validate_token(bt.token or "", f"{p}.token")
        out += validate_token_usages(bt.usages, f"{p}.usages")
        out += validate_token_groups(bt.usages, bt.groups, f"{p}.groups")
        if bt.expires is not None and bt.ttl is not None:
            out.append(_invalid(p, "", "the BootstrapToken .TTL and .Expires fields are mutually exclusive"))
    return out


def validate_node_registration(nr: NodeRegistrationOptions, fld: str = "nodeRegistration") -> Errors:
    out: Errors = []
    if not nr.name:
        out.append(
            FieldError(
                fld,
                None,
                "--node-name or .nodeRegistration.name in the config file is a required value. It seems like this "
                "value couldn't be automatically detected in your environment, please specify the desired value "
                "using the CLI or config file.",
                kind="Required value",
            )
        )
    else:
        out += [_invalid(f"{fld}.name", nr.name, e) for e in dns1123_subdomain_errors(nr.name)]
    out += validate_socket_path(nr.cri_socket, f"{fld}.criSocket")
    out += validate_extra_args(nr.kubelet_extra_args, f"{fld}.kubeletExtraArgs")
    out += validate_image_pull_policy(nr.image_pull_policy, f"{fld}.imagePullPolicy")
    return out


# --- networking -----------------------------------------------------------------------------------------------------


def validate_ipnet(value: str, min_addrs: int, fld: str) -> Errors:
    nets = parse_cidrs(value)
    if nets is None:
        return [_invalid(fld, value, "couldn't parse subnet")]
    out: Errors = []
    dual_msg = "expected one (IPv4 or IPv6) CIDR or two CIDRs from each family for dual-stack networking"
    if len(nets) > 2 or (len(nets) == 2 and nets[0].version == nets[1].version):
        out.append(_invalid(fld, value, dual_msg))
    site_local = ipaddress.ip_network("fec0::/10")
    for n in nets:
        size = range_size(n)
        if size < min_addrs:
            out.append(
                _invalid(fld, str(n), f"subnet with {size} address(es) is too small, the minimum is {min_addrs}")
            )
        if n.version == 6 and (n.overlaps(site_local)):
            log.warning(
                "the subnet %s contains IPv6 site-local addresses that belong to fec0::/10 which has been deprecated "
                "by rfc3879",
                n,
            )
    return out


def _arg_value(args: Sequence[Arg], name: str) -> str | None:
    value = None
    for a in args:  # the last one wins, as kubeadm's GetArgValue(..., -1)
        if a.name == name:
            value = a.value
    return value


def validate_networking(cluster: ClusterConfiguration, fld: str = "networking") -> Errors:
    net = cluster.networking
    out = [_invalid(f"{fld}.dnsDomain", net.dns_domain, e) for e in dns1123_subdomain_errors(net.dns_domain)]
    if net.service_subnet:
        p = f"{fld}.serviceSubnet"
        errs = validate_ipnet(net.service_subnet, c.MINIMUM_ADDRESSES_IN_SERVICE_SUBNET, p)
        out += errs
        for n in parse_cidrs(net.service_subnet) or []:
            bits = n.max_prefixlen
            if bits - n.prefixlen > c.MAXIMUM_BITS_FOR_SERVICE_SUBNET:
                out.append(
                    _invalid(
                        p,
                        str(n),
                        f"specified service subnet is too large; for {bits}-bit addresses, the mask must be >= "
                        f"{bits - c.MAXIMUM_BITS_FOR_SERVICE_SUBNET}",
                    )
                )
    if net.pod_subnet:
        p = f"{fld}.podSubnet"
        out += validate_ipnet(net.pod_subnet, c.MINIMUM_ADDRESSES_IN_POD_SUBNET, p)
        if _arg_value(cluster.controller_manager.extra_args, "allocate-node-cidrs") != "false":
            for n in parse_cidrs(net.pod_subnet) or []:
                flag = "node-cidr-mask-size-ipv6" if n.version == 6 else "node-cidr-mask-size-ipv4"
                raw = _arg_value(cluster.controller_manager.extra_args, flag)
                default = c.DEFAULT_NODE_CIDR_MASK_SIZE_V6 if n.version == 6 else c.DEFAULT_NODE_CIDR_MASK_SIZE_V4
                if raw:
                    try:
                        node_mask = int(raw)
                    except ValueError:
                        out.append(
                            _invalid(
                                p,
                                str(n),
                                f"could not parse the value of the kube-controller-manager flag {flag} as an integer: "
                                f'strconv.Atoi: parsing "{raw}": invalid syntax',
                            )
                        )
                        continue
                else:
                    node_mask = default
                if n.prefixlen > node_mask:
                    out.append(
                        _invalid(
                            p,
                            str(n),
                            f"the size of pod subnet with mask {n.prefixlen} is smaller than the size of node subnet "
                            f"with mask {node_mask}",
                        )
                    )
                elif node_mask - n.prefixlen > c.POD_SUBNET_NODE_MASK_MAX_DIFF:
                    out.append(
                        _invalid(
                            p,
                            str(n),
                            f"pod subnet mask ({n.prefixlen}) and node-mask ({node_mask}) difference is greater than "
                            f"{c.POD_SUBNET_NODE_MASK_MAX_DIFF}",
                        )
                    )
    return out


# --- etcd -----------------------------------------------------------------------------------------------------------


def validate_urls(urls: Sequence[str], require_https: bool, fld: str) -> Errors:
    out = []
    for u in urls:
        try:
            scheme = urlparse(u).scheme
        except ValueError as e:
            out.append(_invalid(fld, u, f"URL parse error: {e}"))
            continue
        if require_https and scheme != "https":
            out.append(_invalid(fld, u, "the URL must be using the HTTPS scheme"))
        if not scheme:
            out.append(_invalid(fld, u, "the URL without scheme is not allowed"))
    return out


def validate_etcd(etcd: Etcd, fld: str = "etcd") -> Errors:
    if etcd.local is None and etcd.external is None:
        return [_invalid(fld, "", "either .Etcd.Local or .Etcd.External is required")]
    if etcd.local is not None and etcd.external is not None:
        return [_invalid(fld, "", ".Etcd.Local and .Etcd.External are mutually exclusive")]
    out: Errors = []
    if etcd.local is not None:
        lp = f"{fld}.local"
        out += validate_absolute_path(etcd.local.data_dir, f"{lp}.dataDir")
        out += validate_cert_sans(etcd.local.server_cert_sans, f"{lp}.serverCertSANs")
        out += validate_cert_sans(etcd.local.peer_cert_sans, f"{lp}.peerCertSANs")
        if etcd.local.image_repository:
            out += validate_image_repository(etcd.local.image_repository, f"{lp}.imageRepository")
        out += validate_extra_args(etcd.local.extra_args, f"{lp}.extraArgs")
    if etcd.external is not None:
        ext = etcd.external
        ep = f"{fld}.external"
        require_https = bool(ext.ca_file or ext.cert_file or ext.key_file)
        if bool(ext.cert_file) != bool(ext.key_file):
            out.append(
                _invalid(
                    ep, "", "either both or none of .Etcd.External.CertFile and .Etcd.External.KeyFile must be set"
                )
            )
        if ext.cert_file and ext.key_file and not ext.ca_file:
            out.append(
                _invalid(
                    ep, "", "setting .Etcd.External.CertFile and .Etcd.External.KeyFile requires .Etcd.External.CAFile"
                )
            )
        out += validate_urls(ext.endpoints, require_https, f"{ep}.endpoints")
        for name, value in (("caFile", ext.ca_file), ("certFile", ext.cert_file), ("keyFile", ext.key_file)):
            if value:
                out += validate_absolute_path(value, f"{ep}.{name}")
    return out


# --- whole kinds ----------------------------------------------------------------------------------------------------


def validate_cluster(cluster: ClusterConfiguration) -> Errors:
    """kubeadm's ValidateClusterConfiguration (cert-validity problems are warnings, as in kubeadm)."""
    out: Errors = []
    if cluster.dns.image_repository:
        out += validate_image_repository(cluster.dns.image_repository, "dns.imageRepository")
    out += validate_networking(cluster)
    out += validate_cert_sans(cluster.api_server.cert_sans, "apiServer.certSANs")
    out += validate_extra_args(cluster.api_server.extra_args, "apiServer.extraArgs")
    out += validate_extra_args(cluster.controller_manager.extra_args, "controllerManager.extraArgs")
    out += validate_extra_args(cluster.scheduler.extra_args, "scheduler.extraArgs")
    out += validate_absolute_path(cluster.certificates_dir, "certificatesDir")
    for name in cluster.feature_gates:
        if name not in features.FEATURES:
            out.append(_invalid("featureGates", GoValue(cluster.feature_gates), f"{name} is not a valid feature name."))
        elif features.FEATURES[name].stage == "DEPRECATED":
            log.warning(
                "Setting deprecated feature gate %s=%s. %s",
                name,
                str(cluster.feature_gates[name]).lower(),
                features.FEATURES[name].deprecation_message,
            )
    if cluster.control_plane_endpoint:
        try:
            parse_host_port(cluster.control_plane_endpoint)
        except ValueError:
            out.append(_invalid("controlPlaneEndpoint", cluster.control_plane_endpoint, "endpoint is not valid"))
    out += validate_image_repository(cluster.image_repository, "imageRepository")
    out += validate_etcd(cluster.etcd)
    algos = sorted(c.ENCRYPTION_ALGORITHMS)
    if cluster.encryption_algorithm not in algos:
        out.append(
            _invalid(
                "encryptionAlgorithm",
                cluster.encryption_algorithm,
                f'Invalid encryption algorithm "{cluster.encryption_algorithm}". Must be one of [{" ".join(algos)}]',
            )
        )
    from pykubeadm.api._base import format_duration

    for name, value, limit, what in (
        (
            "certificateValidityPeriod",
            cluster.certificate_validity_period,
            c.CERTIFICATE_VALIDITY_PERIOD,
            "certificate",
        ),
        (
            "caCertificateValidityPeriod",
            cluster.ca_certificate_validity_period,
            c.CA_CERTIFICATE_VALIDITY_PERIOD,
            "CA certificate",
        ),
    ):
        if value is not None and value > limit:
            log.warning(
                "WARNING: %s: the value %s is more than the recommended default for %s expiration: %s",
                name,
                format_duration(value),
                what,
                format_duration(limit),
            )
    return out


def validate_init(init: InitConfiguration, cluster: ClusterConfiguration) -> Errors:
    """kubeadm's ValidateInitConfiguration (which includes the ClusterConfiguration), in kubeadm's order."""
    out = validate_node_registration(init.node_registration)
    out += validate_bootstrap_tokens(init.bootstrap_tokens)
    out += validate_cluster(cluster)
    out += validate_api_endpoint(init.local_api_endpoint, "localAPIEndpoint")
    out += validate_certificate_key(init.certificate_key, "certificateKey")
    return out


def _split_host_port_error(endpoint: str) -> str | None:
    try:
        split_host_port(endpoint)
    except ValueError as e:
        return str(e)
    return None


def validate_discovery(d: Discovery, fld: str = "discovery") -> Errors:
    out: Errors = []
    if d.bootstrap_token is None and d.file is None:
        out.append(_invalid(fld, "", "bootstrapToken or file must be set"))
    if d.bootstrap_token is not None and d.file is not None:
        out.append(_invalid(fld, "", "bootstrapToken and file cannot both be set"))
    if d.bootstrap_token is not None:
        b = d.bootstrap_token
        bp = f"{fld}.bootstrapToken"
        if not b.api_server_endpoint:
            out.append(FieldError(bp, None, "APIServerEndpoint is not set", kind="Required value"))
        if not b.ca_cert_hashes and not b.unsafe_skip_ca_verification:
            out.append(
                _invalid(
                    f"{bp}.caCertHashes",
                    "",
                    "using token-based discovery without caCertHashes can be unsafe. Set unsafeSkipCAVerification as "
                    "true in your kubeadm config file or pass --discovery-token-unsafe-skip-ca-verification flag to "
                    "continue",
                )
            )
        out += validate_token(b.token, f"{bp}.token")
        err = _split_host_port_error(b.api_server_endpoint)
        if err:
            out.append(_invalid(f"{bp}.apiServerEndpoint", b.api_server_endpoint, err))
        out += validate_token(d.tls_bootstrap_token, f"{fld}.tlsBootstrapToken")
    if d.file is not None:
        path = d.file.kube_config_path
        fp = f"{fld}.file.kubeConfigPath"
        scheme = urlparse(path).scheme
        if not scheme:
            import os

            if not os.path.exists(path):
                out.append(_invalid(fp, path, "not a valid HTTPS URL or a file on disk"))
        elif scheme != "https":
            out.append(_invalid(fp, path, "if a URL is used, the scheme must be https"))
        if d.tls_bootstrap_token:
            out += validate_token(d.tls_bootstrap_token, f"{fld}.tlsBootstrapToken")
    return out


def validate_join(join: JoinConfiguration) -> Errors:
    out = validate_discovery(join.discovery)
    out += validate_node_registration(join.node_registration)
    if join.control_plane is not None:
        out += validate_api_endpoint(join.control_plane.local_api_endpoint, "controlPlane.localAPIEndpoint")
        out += validate_certificate_key(join.control_plane.certificate_key, "controlPlane.certificateKey")
    if not is_abs(join.ca_cert_path) or not join.ca_cert_path.endswith(".crt"):
        out.append(_invalid("caCertPath", join.ca_cert_path, "the ca certificate path must be an absolute path"))
    return out


def validate_reset(reset: ResetConfiguration) -> Errors:
    out = validate_socket_path(reset.cri_socket, "criSocket")
    out += validate_absolute_path(reset.certificates_dir, "certificatesDir")
    for i, flag in enumerate(reset.unmount_flags):
        if flag not in UNMOUNT_FLAGS:
            out.append(_invalid("unmountFlags", f"index {i}", f"unknown unmount flag {flag}"))
    return out


def validate_upgrade(up: UpgradeConfiguration) -> Errors:
    out: Errors = []
    if up.apply.patches is not None:
        out += validate_absolute_path(up.apply.patches.directory, "apply.patches.directory")
    if up.node.patches is not None:
        out += validate_absolute_path(up.node.patches.directory, "node.patches.directory")
    out += validate_image_pull_policy(up.apply.image_pull_policy, "apply.imagePullPolicy")
    out += validate_image_pull_policy(up.node.image_pull_policy, "node.imagePullPolicy")
    return out


def raise_if(errors: Sequence[FieldError | str]) -> None:
    if errors:
        raise ValidationError(errors)
