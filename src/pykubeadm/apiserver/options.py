"""kube-apiserver's command-line flags (the set kubeadm writes into kube-apiserver.yaml, plus a few safe extras) as a
click command decorator and the validated `ServerOptions` they produce. Unknown flags are a startup error (click names
them); flags whose value we cannot honour raise `ConfigError` naming the flag.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from pykubeadm import constants as c
from pykubeadm.errors import ValidationError
from pykubeadm.layout import Layout

__all__ = ["VERSION_ENV", "ServerOptions", "apiserver_flags", "options_from_flags"]

#: Environment variable carrying the version to report (the kubelet passes the image tag).
VERSION_ENV = "PYKUBEADM_COMPONENT_VERSION"

KNOWN_AUTHZ_MODES = ("Node", "RBAC", "AlwaysAllow", "AlwaysDeny")


@dataclass
class ServerOptions:
    advertise_address: str = ""
    bind_address: str = "0.0.0.0"
    secure_port: int = 6443
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    client_ca_file: Path | None = None
    etcd_servers: str = "memory://"
    etcd_cafile: Path | None = None
    etcd_certfile: Path | None = None
    etcd_keyfile: Path | None = None
    etcd_prefix: str = "/registry"
    authorization_mode: list[str] = field(default_factory=lambda: ["AlwaysAllow"])
    enable_admission_plugins: list[str] = field(default_factory=list)
    disable_admission_plugins: list[str] = field(default_factory=list)
    enable_bootstrap_token_auth: bool = False
    anonymous_auth: bool = True
    allow_privileged: bool = False
    service_account_issuer: list[str] = field(default_factory=list)
    service_account_key_file: list[Path] = field(default_factory=list)
    service_account_signing_key_file: Path | None = None
    api_audiences: list[str] = field(default_factory=list)
    service_cluster_ip_range: str = "10.96.0.0/12"
    service_node_port_range: str = "30000-32767"
    kubelet_client_certificate: Path | None = None
    kubelet_client_key: Path | None = None
    kubelet_certificate_authority: Path | None = None
    kubelet_preferred_address_types: list[str] = field(
        default_factory=lambda: ["Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"]
    )
    proxy_client_cert_file: Path | None = None
    proxy_client_key_file: Path | None = None
    requestheader_client_ca_file: Path | None = None
    requestheader_allowed_names: list[str] = field(default_factory=list)
    requestheader_username_headers: list[str] = field(default_factory=list)
    requestheader_group_headers: list[str] = field(default_factory=list)
    requestheader_extra_headers_prefix: list[str] = field(default_factory=list)
    token_auth_file: Path | None = None
    #: Where the one-JSON-line-per-request audit log goes: "-" = stdout, a file, or "" = off (the default, as
    #: kube-apiserver's: kubeadm's manifests enable no audit log).
    audit_log_path: str = ""
    #: --audit-policy-file, parsed (an audit Policy); None = nothing is audited, as kube-apiserver without a policy.
    audit_policy: Any = None
    audit_log_format: str = "json"
    audit_log_maxage: int = 0
    audit_log_maxbackup: int = 0
    audit_log_maxsize: int = 0
    #: --encryption-provider-config, validated at start (an EncryptionConfig), and its file (for automatic reload).
    encryption_config: Any = None
    encryption_provider_config: Path | None = None
    encryption_provider_config_automatic_reload: bool = False
    shutdown_delay_seconds: float = 0.0
    #: --tls-min-version (Go name) and --tls-cipher-suites (Go names), checked at start.
    tls_min_version: str = ""
    tls_cipher_suites: list[str] = field(default_factory=list)
    profiling: bool = True
    feature_gates: dict[str, bool] = field(default_factory=dict)
    request_timeout_seconds: float = 60.0
    event_ttl_seconds: float = 3600.0
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    version: str = c.KUBERNETES_VERSION
    root: Path = Path("/")
    #: The flags as given (names without `--`, node paths), for the auth package's `build_auth`.
    raw_flags: dict[str, Any] = field(default_factory=dict)

    def host_path(self, node_path: str) -> Path:
        return Layout(self.root).host(node_path)


def _err(msg: str) -> ValidationError:
    return ValidationError([msg])


def _list(v: str | None) -> list[str]:
    return [x.strip() for x in (v or "").split(",") if x.strip()]


# (flag name, click kwargs). Bool flags accept `--flag`, `--flag=true|false`.
_FLAGS: list[tuple[str, dict[str, Any]]] = [
    ("advertise-address", {}),
    ("bind-address", {}),
    ("secure-port", {"type": int}),
    ("tls-cert-file", {}),
    ("tls-private-key-file", {}),
    ("client-ca-file", {}),
    ("etcd-servers", {}),
    ("etcd-cafile", {}),
    ("etcd-certfile", {}),
    ("etcd-keyfile", {}),
    ("etcd-prefix", {}),
    ("authorization-mode", {}),
    ("enable-admission-plugins", {}),
    ("disable-admission-plugins", {}),
    ("admission-control-config-file", {}),
    ("enable-bootstrap-token-auth", {"type": click.BOOL, "is_flag": False, "flag_value": "true"}),
    ("anonymous-auth", {"type": click.BOOL, "is_flag": False, "flag_value": "true"}),
    ("allow-privileged", {"type": click.BOOL, "is_flag": False, "flag_value": "true"}),
    ("service-account-issuer", {"multiple": True}),
    ("service-account-key-file", {"multiple": True}),
    ("service-account-signing-key-file", {}),
    ("api-audiences", {}),
    ("service-cluster-ip-range", {}),
    ("service-node-port-range", {}),
    ("kubelet-client-certificate", {}),
    ("kubelet-client-key", {}),
    ("kubelet-certificate-authority", {}),
    ("kubelet-preferred-address-types", {}),
    ("proxy-client-cert-file", {}),
    ("proxy-client-key-file", {}),
    ("requestheader-client-ca-file", {}),
    ("requestheader-allowed-names", {}),
    ("requestheader-username-headers", {}),
    ("requestheader-group-headers", {}),
    ("requestheader-extra-headers-prefix", {}),
    ("token-auth-file", {}),
    ("audit-log-path", {}),
    ("audit-policy-file", {}),
    ("audit-log-format", {}),
    ("audit-log-maxage", {"type": int}),
    ("audit-log-maxbackup", {"type": int}),
    ("audit-log-maxsize", {"type": int}),
    ("audit-log-mode", {}),
    ("audit-webhook-config-file", {}),
    ("encryption-provider-config", {}),
    ("encryption-provider-config-automatic-reload", {"type": click.BOOL, "is_flag": False, "flag_value": "true"}),
    ("shutdown-delay-duration", {}),
    ("tls-min-version", {}),
    ("tls-cipher-suites", {}),
    ("profiling", {"type": click.BOOL, "is_flag": False, "flag_value": "true"}),
    ("feature-gates", {"multiple": True}),
    ("request-timeout", {}),
    ("event-ttl", {}),
    ("service-account-lookup", {"type": click.BOOL, "is_flag": False, "flag_value": "true"}),
    ("oidc-issuer-url", {}),
    ("oidc-client-id", {}),
    ("oidc-username-claim", {}),
    ("oidc-username-prefix", {}),
    ("oidc-groups-claim", {}),
    ("oidc-groups-prefix", {}),
    ("oidc-required-claim", {"multiple": True}),
    ("oidc-ca-file", {}),
    ("oidc-signing-algs", {}),
    ("authentication-config", {}),
    ("max-requests-inflight", {"type": int}),
    ("max-mutating-requests-inflight", {"type": int}),
    ("default-not-ready-toleration-seconds", {"type": int}),
    ("default-unreachable-toleration-seconds", {"type": int}),
    ("endpoint-reconciler-type", {}),
    # Accepted for kubeadm manifests; the aggregator always routes to Service endpoints (as with true).
    ("enable-aggregator-routing", {"type": click.BOOL, "is_flag": False, "flag_value": "true"}),
    ("v", {"type": int}),
    ("kubernetes-version", {"hidden": True, "envvar": VERSION_ENV}),
]


def apiserver_flags(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a click command with every kube-apiserver flag we implement."""
    for name, kw in reversed(_FLAGS):
        fn = click.option(f"--{name}", name.replace("-", "_"), default=None, **kw)(fn)
    return fn


def _duration_seconds(flag: str, v: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    for u in ("ms", "s", "m", "h"):
        if v.endswith(u):
            try:
                return float(v[: -len(u)]) * units[u]
            except ValueError:
                break
    raise _err(f"invalid value {v!r} for flag --{flag}: want a duration such as 10s")


def _serving_options(o: ServerOptions, flags: dict[str, Any]) -> None:
    from pykubeadm.featuregates import FeatureGateError, parse_feature_gates
    from pykubeadm.util.goduration import parse_duration
    from pykubeadm.util.gotls import openssl_ciphers, tls_version

    if flags.get("tls_min_version"):
        try:
            tls_version(flags["tls_min_version"])
        except ValueError as e:
            raise _err(f"invalid value for flag --tls-min-version: {e}") from None
        o.tls_min_version = flags["tls_min_version"]
    if flags.get("tls_cipher_suites"):
        suites = _list(flags["tls_cipher_suites"])
        try:
            openssl_ciphers(suites)
        except ValueError as e:
            raise _err(f"invalid value for flag --tls-cipher-suites: {e}") from None
        o.tls_cipher_suites = suites
    if flags.get("profiling") is not None:
        o.profiling = bool(flags["profiling"])
    for value in flags.get("feature_gates") or ():
        try:
            o.feature_gates.update(parse_feature_gates(value))
        except FeatureGateError as e:
            raise _err(f'invalid argument "{value}" for "--feature-gates" flag: {e}') from None
    for flag, attr in (("request_timeout", "request_timeout_seconds"), ("event_ttl", "event_ttl_seconds")):
        if flags.get(flag):
            try:
                seconds = parse_duration(flags[flag]).total_seconds()
            except ValueError as e:
                raise _err(f'invalid argument "{flags[flag]}" for "--{flag.replace("_", "-")}" flag: {e}') from None
            if seconds <= 0 and flag == "request_timeout":
                raise _err("--request-timeout: Invalid value: must be greater than 0")
            setattr(o, attr, seconds)


def _audit_options(o: ServerOptions, flags: dict[str, Any], lay: Layout) -> None:
    from pykubeadm.apiserver.audit.policy import AuditPolicyError, load_policy

    if flags.get("audit_webhook_config_file"):
        raise _err(
            "unsupported flag --audit-webhook-config-file: the audit webhook backend is not supported by this "
            "kube-apiserver; use the log backend (--audit-log-path)"
        )
    fmt = flags.get("audit_log_format") or "json"
    if fmt not in ("json", "legacy"):
        raise _err(f'invalid value "{fmt}" for flag --audit-log-format: must be one of legacy, json')
    o.audit_log_format = fmt
    mode = flags.get("audit_log_mode") or "blocking"
    if mode not in ("batch", "blocking", "blocking-strict"):
        raise _err(f'invalid value "{mode}" for flag --audit-log-mode: must be one of batch, blocking, blocking-strict')
    for name in ("audit_log_maxage", "audit_log_maxbackup", "audit_log_maxsize"):
        v = flags.get(name)
        if v is not None:
            if v < 0:
                raise _err(f"--{name.replace('_', '-')} {v} can't be a negative number")
            setattr(o, name, v)
    if flags.get("audit_policy_file"):
        try:
            o.audit_policy = load_policy(lay.host(flags["audit_policy_file"]))
        except AuditPolicyError as e:
            raise _err(f"invalid value for flag --audit-policy-file: {e}") from None


def _encryption_options(o: ServerOptions, flags: dict[str, Any], lay: Layout) -> None:
    if flags.get("encryption_provider_config_automatic_reload") is not None:
        o.encryption_provider_config_automatic_reload = bool(flags["encryption_provider_config_automatic_reload"])
    if not flags.get("encryption_provider_config"):
        if o.encryption_provider_config_automatic_reload:
            raise _err("--encryption-provider-config-automatic-reload requires --encryption-provider-config")
        return
    # Imported only with the flag set: the providers and their cryptography are not every start's cost.
    from pykubeadm.apiserver.encryption import EncryptionConfigError, load_encryption_config

    o.encryption_provider_config = lay.host(flags["encryption_provider_config"])
    try:
        o.encryption_config = load_encryption_config(o.encryption_provider_config)
    except EncryptionConfigError as e:
        raise _err(f"invalid value for flag --encryption-provider-config: {e}") from None


def options_from_flags(flags: dict[str, Any], root: Path) -> ServerOptions:
    """Validate raw flag values into ServerOptions; file flags are node paths mapped under `root`."""
    lay = Layout(root)
    o = ServerOptions(root=root)
    for name, value in flags.items():
        if value is None or name in ("v", "kubernetes_version"):
            continue
        o.raw_flags[name.replace("_", "-")] = list(value) if isinstance(value, tuple) else value

    def path(name: str) -> Path | None:
        v = flags.get(name)
        return lay.host(v) if v else None

    if flags.get("advertise_address"):
        try:
            ipaddress.ip_address(flags["advertise_address"])
        except ValueError:
            raise _err(
                f"invalid value {flags['advertise_address']!r} for flag --advertise-address: not an IP address"
            ) from None
        o.advertise_address = flags["advertise_address"]
    if flags.get("bind_address"):
        o.bind_address = flags["bind_address"]
    if flags.get("secure_port") is not None:
        if not 0 <= flags["secure_port"] <= 65535:
            raise _err("--secure-port must be between 0 and 65535, inclusive")
        o.secure_port = flags["secure_port"]
    o.tls_cert_file, o.tls_private_key_file = path("tls_cert_file"), path("tls_private_key_file")
    if bool(o.tls_cert_file) != bool(o.tls_private_key_file):
        raise _err("--tls-cert-file and --tls-private-key-file must be given together")
    o.client_ca_file = path("client_ca_file")
    if flags.get("etcd_servers"):
        url = flags["etcd_servers"]
        if url.startswith("sqlite://"):
            p = url[len("sqlite://") :]
            q = ""
            if "?" in p:
                p, q = p.split("?", 1)
            url = "sqlite://" + str(lay.host(p)) + (f"?{q}" if q else "")
        o.etcd_servers = url
    o.etcd_cafile, o.etcd_certfile, o.etcd_keyfile = path("etcd_cafile"), path("etcd_certfile"), path("etcd_keyfile")
    if flags.get("etcd_prefix") and flags["etcd_prefix"] != "/registry":
        raise _err(f"unsupported value {flags['etcd_prefix']!r} for flag --etcd-prefix: only /registry is implemented")
    if flags.get("authorization_mode"):
        modes = _list(flags["authorization_mode"])
        bad = [m for m in modes if m not in KNOWN_AUTHZ_MODES]
        if bad:
            raise _err(
                f"unsupported value for flag --authorization-mode: {', '.join(bad)} (implemented: {', '.join(KNOWN_AUTHZ_MODES)})"
            )
        o.authorization_mode = modes
    for name in ("enable_admission_plugins", "disable_admission_plugins"):
        setattr(o, name, _list(flags.get(name)))
    for name in ("enable_bootstrap_token_auth", "anonymous_auth", "allow_privileged"):
        if flags.get(name) is not None:
            setattr(o, name, bool(flags[name]))
    o.service_account_issuer = list(flags.get("service_account_issuer") or [])
    o.service_account_key_file = [lay.host(p) for p in flags.get("service_account_key_file") or []]
    o.service_account_signing_key_file = path("service_account_signing_key_file")
    o.api_audiences = _list(flags.get("api_audiences")) or list(o.service_account_issuer[:1])
    if flags.get("service_cluster_ip_range"):
        for cidr in _list(flags["service_cluster_ip_range"]):
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise _err(f"invalid value {cidr!r} for flag --service-cluster-ip-range") from None
        o.service_cluster_ip_range = flags["service_cluster_ip_range"]
    if flags.get("service_node_port_range"):
        o.service_node_port_range = flags["service_node_port_range"]
    o.kubelet_client_certificate, o.kubelet_client_key = path("kubelet_client_certificate"), path("kubelet_client_key")
    o.kubelet_certificate_authority = path("kubelet_certificate_authority")
    if flags.get("kubelet_preferred_address_types"):
        o.kubelet_preferred_address_types = _list(flags["kubelet_preferred_address_types"])
    o.proxy_client_cert_file, o.proxy_client_key_file = path("proxy_client_cert_file"), path("proxy_client_key_file")
    o.requestheader_client_ca_file = path("requestheader_client_ca_file")
    for name in (
        "requestheader_allowed_names",
        "requestheader_username_headers",
        "requestheader_group_headers",
        "requestheader_extra_headers_prefix",
    ):
        setattr(o, name, _list(flags.get(name)))
    o.token_auth_file = path("token_auth_file")
    if flags.get("audit_log_path") is not None:
        v = flags["audit_log_path"]
        o.audit_log_path = v if v in ("-", "") else str(lay.host(v))
    _encryption_options(o, flags, lay)
    _audit_options(o, flags, lay)
    _serving_options(o, flags)
    if flags.get("shutdown_delay_duration"):
        o.shutdown_delay_seconds = _duration_seconds("shutdown-delay-duration", flags["shutdown_delay_duration"])
    for name in ("max_requests_inflight", "max_mutating_requests_inflight"):
        if flags.get(name) is not None:
            if flags[name] < 0:
                raise _err(f"--{name.replace('_', '-')} can not be negative value")
            setattr(o, name, flags[name])
    version = flags.get("kubernetes_version") or os.environ.get(VERSION_ENV) or c.KUBERNETES_VERSION
    o.version = version if version.startswith("v") else "v" + version
    for f in (o.tls_cert_file, o.tls_private_key_file, o.client_ca_file, o.requestheader_client_ca_file):
        if f is not None and not f.exists():
            raise _err(f"unable to load file {f}: no such file or directory")
    return o
