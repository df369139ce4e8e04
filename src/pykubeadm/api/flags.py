"""kubeadm flags → config: applying the flags the user set to Init/Join configurations, kubeadm's rule for mixing
`--config` with flags, `--feature-gates` parsing and the `--ignore-preflight-errors` check."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, SupportsIndex, SupportsInt

from pykubeadm.api import v1beta4
from pykubeadm.api._base import parse_duration
from pykubeadm.errors import FieldError, ValidationError

__all__ = [
    "ALLOWED_WITH_CONFIG",
    "apply_common_flag",
    "apply_init_flags",
    "apply_join_flags",
    "as_int",
    "as_list",
    "check_mixed_arguments",
    "check_mixing",
    "mixed_arguments_error",
    "parse_feature_gates",
    "validate_ignore_preflight_errors",
]


#: Flags that may be combined with --config (kubeadm's isAllowedFlag); any `skip-*` flag is allowed too.
ALLOWED_WITH_CONFIG = frozenset(
    {
        "config",
        "ignore-preflight-errors",
        "dry-run",
        "kubeconfig",
        "node-name",
        "kubeconfig-dir",
        "upload-certs",
        "print-join-command",
        "rootfs",
        "v",
        "log-file",
        "yes",
    }
)


def mixed_arguments_error(set_flags: Iterable[str]) -> str | None:
    """kubeadm's ValidateMixedArguments: the error text when --config is combined with other flags, else None."""
    names = list(set_flags)
    if "config" not in names:
        return None
    bad = [n for n in names if n not in ALLOWED_WITH_CONFIG and not n.startswith("skip-")]
    if not bad:
        return None
    return f"can not mix '--config' with arguments [{' '.join(bad)}]"


def check_mixed_arguments(set_flags: Iterable[str]) -> None:
    msg = mixed_arguments_error(set_flags)
    if msg:
        raise ValidationError([msg])


def validate_ignore_preflight_errors(from_cli: Iterable[str], from_config: Iterable[str]) -> set[str]:
    """Merge (lower-cased) ignore-preflight-errors; `all` together with other names is an error."""
    names = {s.lower() for s in from_config} | {s.lower() for s in from_cli}
    if "all" in names and len(names) > 1:
        raise ValidationError(
            [
                FieldError(
                    "ignore-preflight-errors",
                    ",".join(sorted(names)),
                    "don't specify individual checks if 'all' is used",
                )
            ]
        )
    return names


def as_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, Iterable):
        raise TypeError(f"not a list of strings: {value!r}")
    return [str(v) for v in value]


def as_duration(value: object) -> timedelta:
    if isinstance(value, timedelta):
        return value
    try:
        return parse_duration(str(value))
    except ValueError as e:
        raise ValidationError([f'invalid argument "{value}": {e}']) from None


def as_int(name: str, value: object) -> int:
    try:
        if not isinstance(value, str | bytes | SupportsInt | SupportsIndex):
            raise TypeError(f"not a number: {value!r}")
        return int(value)
    except (TypeError, ValueError):
        raise ValidationError(
            [f'invalid argument "{value}" for "--{name}" flag: strconv.ParseInt: parsing "{value}": invalid syntax']
        ) from None


def parse_feature_gates(value: object) -> dict[str, bool]:
    """`--feature-gates=A=true,B=false` → {A: True, B: False}; unknown names are errors."""
    from pykubeadm.api import features

    if isinstance(value, Mapping):
        gates = {str(k): bool(v) for k, v in value.items()}
    else:
        gates = {}
        for part in as_list(value):
            name, sep, raw = part.partition("=")
            if not sep:
                raise ValidationError([f"missing bool value for {name}"])
            if raw.lower() not in ("true", "false", "1", "0", "t", "f"):
                raise ValidationError(
                    [f'invalid value of {name}={raw}, err: strconv.ParseBool: parsing "{raw}": invalid syntax']
                )
            gates[name.strip()] = raw.lower() in ("true", "1", "t")
    for name in gates:
        if name not in features.FEATURES:
            raise ValidationError([f"unrecognized feature-gate key: {name}"])
    return gates


def _set_token(init: v1beta4.InitConfiguration, token: object) -> None:
    from pykubeadm.bootstrap.token import parse_token

    try:
        parse_token(str(token))
    except ValueError as e:
        raise ValidationError([str(e)]) from None
    init.bootstrap_tokens[0].token = str(token)


def apply_init_flags(
    init: v1beta4.InitConfiguration, cluster: v1beta4.ClusterConfiguration, flags: Mapping[str, object]
) -> None:
    for name, value in flags.items():
        match name:
            case "apiserver-advertise-address":
                init.local_api_endpoint.advertise_address = str(value)
            case "apiserver-bind-port":
                init.local_api_endpoint.bind_port = as_int(name, value)
            case "control-plane-endpoint":
                cluster.control_plane_endpoint = str(value)
            case "pod-network-cidr":
                cluster.networking.pod_subnet = str(value)
            case "service-cidr":
                cluster.networking.service_subnet = str(value)
            case "service-dns-domain":
                cluster.networking.dns_domain = str(value)
            case "kubernetes-version":
                cluster.kubernetes_version = str(value)
            case "cert-dir":
                cluster.certificates_dir = str(value)
            case "apiserver-cert-extra-sans":
                cluster.api_server.cert_sans = as_list(value)
            case "image-repository":
                cluster.image_repository = str(value)
            case "feature-gates":
                cluster.feature_gates = parse_feature_gates(value)
            case "token":
                if value:
                    _set_token(init, value)
            case "token-ttl":
                init.bootstrap_tokens[0].ttl = as_duration(value)
            case "cri-socket":
                init.node_registration.cri_socket = str(value)
            case "patches":
                init.patches = v1beta4.Patches(directory=str(value)) if value else None
            case "certificate-key":
                init.certificate_key = str(value)
            case _:
                apply_common_flag(init, name, value)


def apply_common_flag(obj: Any, name: str, value: object) -> None:
    """Flags that also apply together with --config (node-name, dry-run, skip-phases, ignore-preflight-errors)."""
    nr = getattr(obj, "node_registration", None)
    match name:
        case "node-name" if nr is not None:
            nr.name = str(value)
        case "dry-run":
            obj.dry_run = bool(value) or obj.dry_run
        case "skip-phases":
            phases = as_list(value)
            if phases:
                obj.skip_phases = phases
        case "ignore-preflight-errors":
            holder = nr if nr is not None else obj
            merged = validate_ignore_preflight_errors(as_list(value), holder.ignore_preflight_errors)
            holder.ignore_preflight_errors = sorted(merged)
        case _:
            pass  # not a config flag (upload-certs, skip-token-print, ...)


def check_mixing(config_file: Path | None, flags: Mapping[str, object]) -> None:
    if config_file is not None:
        check_mixed_arguments(sorted({"config", *flags}))


def apply_join_flags(join: v1beta4.JoinConfiguration, flags: Mapping[str, object]) -> None:
    d = join.discovery
    endpoint = flags.get("api-server-endpoint")
    token = flags.get("token")
    dtoken = flags.get("discovery-token") or token
    if flags.get("discovery-file"):
        d.file = v1beta4.FileDiscovery(kube_config_path=str(flags["discovery-file"]).removeprefix("file://"))
    elif dtoken or endpoint or flags.get("discovery-token-ca-cert-hash"):
        d.bootstrap_token = v1beta4.BootstrapTokenDiscovery(
            token=str(dtoken or ""),
            api_server_endpoint=str(endpoint or ""),
            ca_cert_hashes=as_list(flags.get("discovery-token-ca-cert-hash")),
            unsafe_skip_ca_verification=bool(flags.get("discovery-token-unsafe-skip-ca-verification", False)),
        )
    tls = flags.get("tls-bootstrap-token") or token
    if tls:
        d.tls_bootstrap_token = str(tls)
    elif d.bootstrap_token is not None and not d.tls_bootstrap_token:
        d.tls_bootstrap_token = d.bootstrap_token.token
    if flags.get("control-plane") or any(
        k in flags for k in ("apiserver-advertise-address", "apiserver-bind-port", "certificate-key")
    ):
        if flags.get("control-plane"):
            join.control_plane = join.control_plane or v1beta4.JoinControlPlane()
        if join.control_plane is not None:
            ep = join.control_plane.local_api_endpoint
            if "apiserver-advertise-address" in flags:
                ep.advertise_address = str(flags["apiserver-advertise-address"])
            if "apiserver-bind-port" in flags:
                ep.bind_port = as_int("apiserver-bind-port", flags["apiserver-bind-port"])
            if "certificate-key" in flags:
                join.control_plane.certificate_key = str(flags["certificate-key"])
    for name, value in flags.items():
        match name:
            case "cri-socket":
                join.node_registration.cri_socket = str(value)
            case "patches":
                join.patches = v1beta4.Patches(directory=str(value)) if value else None
            case _:
                apply_common_flag(join, name, value)
