"""kubeadm's command-line flags as reusable click options, keyed by kubeadm flag name (kubeadm's cmd/options).

`option("pod-network-cidr")` is the click decorator of that flag; `INIT_FLAGS` lists the flags of `init`;
`flags_from_click(params, ctx)` returns only the flags the user actually set (kubeadm flag name → value), which is what
`pykubeadm.api.load_init_config` and kubeadm's `--config` mixing rule need.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import click

from pykubeadm import constants as c
from pykubeadm.util.goduration import format_duration, parse_duration

__all__ = [
    "FLAGS",
    "INIT_FLAGS",
    "FlagSpec",
    "GoDuration",
    "apply_options",
    "flags_from_click",
    "option",
]

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


class GoDuration(click.ParamType):
    """A Go duration (`24h0m0s`, `2h`, `0`) → timedelta."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> timedelta:
        if isinstance(value, timedelta):
            return value
        try:
            return parse_duration(str(value))
        except ValueError as e:
            self.fail(f'invalid argument "{value}" for "--{param.name if param else ""}" flag: {e}', param, ctx)


@dataclass(frozen=True)
class FlagSpec:
    """One kubeadm flag: name, help, default and kind (str, int, bool, duration, strings)."""

    name: str
    help: str
    default: Any = None
    kind: str = "str"  # str | int | bool | duration | strings
    metavar: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    def decorator(self) -> Decorator:
        kwargs: dict[str, Any] = {"help": self.help}
        if self.kind == "bool":
            kwargs.update(is_flag=True, default=bool(self.default))
        elif self.kind == "int":
            kwargs.update(type=int, default=self.default, show_default=self.default is not None, metavar="int32")
        elif self.kind == "duration":
            default = format_duration(self.default) if isinstance(self.default, timedelta) else self.default
            kwargs.update(type=GoDuration(), default=default, show_default=True)
        elif self.kind == "strings":
            kwargs.update(multiple=True, default=(), metavar=self.metavar or "strings")
        else:
            kwargs.update(
                type=str, default=self.default, show_default=self.default is not None, metavar=self.metavar or "string"
            )
        kwargs.update(self.extra)
        return click.option(f"--{self.name}", self.dest, **kwargs)


_PATCHES_HELP = (
    'Path to a directory that contains files named "target[suffix][+patchtype].extension". For example, '
    '"kube-apiserver0+merge.yaml" or just "etcd.json". "target" can be one of "kube-apiserver", '
    '"kube-controller-manager", "kube-scheduler", "etcd", "kubeletconfiguration", "corednsdeployment". "patchtype" can '
    'be one of "strategic", "merge" or "json" and they match the patch formats supported by kubectl. The default '
    '"patchtype" is "strategic". "extension" must be either "json" or "yaml". "suffix" is an optional string that can '
    "be used to determine which patches are applied first alpha-numerically."
)


def _feature_gates_help() -> str:
    from pykubeadm.api.features import help_text

    return help_text()


#: Every flag kubeadm's init (and its phases) knows, by name.
FLAGS: dict[str, FlagSpec] = {
    f.name: f
    for f in (
        FlagSpec(
            "apiserver-advertise-address",
            "The IP address the API Server will advertise it's listening on. If not set the default network interface "
            "will be used.",
        ),
        FlagSpec("apiserver-bind-port", "Port for the API Server to bind to.", c.KUBE_APISERVER_PORT, "int"),
        FlagSpec(
            "apiserver-cert-extra-sans",
            "Optional extra Subject Alternative Names (SANs) to use for the API Server serving certificate. Can be both "
            "IP addresses and DNS names.",
            kind="strings",
        ),
        FlagSpec("cert-dir", "The path where to save and store the certificates.", c.DEFAULT_CERTIFICATES_DIR),
        FlagSpec(
            "certificate-key",
            "Key used to encrypt the control-plane certificates in the kubeadm-certs Secret. The certificate key is a "
            "hex encoded string that is an AES key of size 32 bytes.",
        ),
        FlagSpec("config", "Path to a kubeadm configuration file."),
        FlagSpec("control-plane-endpoint", "Specify a stable IP address or DNS name for the control plane."),
        FlagSpec(
            "cri-socket",
            "Path to the CRI socket to connect. If empty kubeadm will try to auto-detect this value; use this option "
            "only if you have more than one CRI installed or if you have non-standard CRI socket.",
        ),
        FlagSpec("dry-run", "Don't apply any changes; just output what would be done.", False, "bool"),
        FlagSpec("feature-gates", "A set of key=value pairs that describe feature gates for various features."),
        FlagSpec(
            "ignore-preflight-errors",
            "A list of checks whose errors will be shown as warnings. Example: 'IsPrivilegedUser,Swap'. Value 'all' "
            "ignores errors from all checks.",
            kind="strings",
        ),
        FlagSpec(
            "image-repository",
            "Choose a container registry to pull control plane images from",
            c.DEFAULT_IMAGE_REPOSITORY,
        ),
        FlagSpec(
            "kubernetes-version",
            "Choose a specific Kubernetes version for the control plane.",
            c.DEFAULT_KUBERNETES_VERSION_LABEL,
        ),
        FlagSpec(
            "kubeconfig",
            "The kubeconfig file to use when talking to the cluster. If the flag is not set, a set of standard "
            "locations can be searched for an existing kubeconfig file.",
            c.KUBERNETES_DIR + "/" + c.ADMIN_KUBECONFIG_FILE,
        ),
        FlagSpec("kubeconfig-dir", "The path where to save the kubeconfig file.", c.KUBERNETES_DIR),
        FlagSpec("node-name", "Specify the node name."),
        FlagSpec("patches", _PATCHES_HELP),
        FlagSpec(
            "pod-network-cidr",
            "Specify range of IP addresses for the pod network. If set, the control plane will automatically allocate "
            "CIDRs for every node.",
        ),
        FlagSpec("service-cidr", "Use alternative range of IP address for service VIPs.", c.DEFAULT_SERVICE_SUBNET),
        FlagSpec(
            "service-dns-domain",
            'Use alternative domain for services, e.g. "myorg.internal".',
            c.DEFAULT_DNS_DOMAIN,
        ),
        FlagSpec(
            "skip-certificate-key-print",
            "Don't print the key used to encrypt the control-plane certificates.",
            False,
            "bool",
        ),
        FlagSpec("skip-phases", "List of phases to be skipped", kind="strings"),
        FlagSpec(
            "skip-token-print",
            "Skip printing of the default bootstrap token generated by 'kubeadm init'.",
            False,
            "bool",
        ),
        FlagSpec(
            "token",
            "The token to use for establishing bidirectional trust between nodes and control-plane nodes. The format "
            r"is [a-z0-9]{6}\.[a-z0-9]{16} - e.g. abcdef.0123456789abcdef",
        ),
        FlagSpec(
            "token-ttl",
            "The duration before the token is automatically deleted (e.g. 1s, 2m, 3h). If set to '0', the token will "
            "never expire",
            c.DEFAULT_TOKEN_DURATION,
            "duration",
        ),
        FlagSpec("upload-certs", "Upload control-plane certificates to the kubeadm-certs Secret.", False, "bool"),
    )
}

#: The flags of `kubeadm init`, in kubeadm's help order.
INIT_FLAGS: tuple[str, ...] = (
    "apiserver-advertise-address",
    "apiserver-bind-port",
    "apiserver-cert-extra-sans",
    "cert-dir",
    "certificate-key",
    "config",
    "control-plane-endpoint",
    "cri-socket",
    "dry-run",
    "feature-gates",
    "ignore-preflight-errors",
    "image-repository",
    "kubernetes-version",
    "node-name",
    "patches",
    "pod-network-cidr",
    "service-cidr",
    "service-dns-domain",
    "skip-certificate-key-print",
    "skip-phases",
    "skip-token-print",
    "token",
    "token-ttl",
    "upload-certs",
)


def option(name: str) -> Decorator:
    """The click option decorator of kubeadm flag `name` (KeyError for an unknown flag)."""
    spec = FLAGS[name]
    if name == "feature-gates":
        spec = FlagSpec(name, _feature_gates_help())
    return spec.decorator()


def apply_options(names: Iterable[str]) -> Decorator:
    """Decorate a command with several flags (in the given order in `--help`)."""
    names = list(names)

    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(names):
            f = option(name)(f)
        return f

    return deco


_SET_SOURCES = {click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT}


def flags_from_click(params: Mapping[str, Any], ctx: click.Context) -> dict[str, Any]:
    """The kubeadm flags the user set on the command line: {"pod-network-cidr": "10.244.0.0/16", ...}.

    String-slice flags are flattened and split on commas, like pflag's StringSlice.
    """
    out: dict[str, Any] = {}
    for dest, value in params.items():
        if ctx.get_parameter_source(dest) not in _SET_SOURCES:
            continue
        name = dest.replace("_", "-")
        spec = FLAGS.get(name)
        if spec is not None and spec.kind == "strings":
            items: list[str] = []
            for v in value or ():
                items += [s.strip() for s in str(v).split(",") if s.strip()]
            value = items
        out[name] = value
    return out


# --- join and reset ---------------------------------------------------------------------------------------------------

for _spec in (
    FlagSpec("control-plane", "Create a new control plane instance on this node", False, "bool"),
    FlagSpec("discovery-file", "For file-based discovery, a file or URL from which to load cluster information."),
    FlagSpec(
        "discovery-token",
        "For token-based discovery, the token used to validate cluster information fetched from the API server.",
    ),
    FlagSpec(
        "discovery-token-ca-cert-hash",
        'For token-based discovery, validate that the root CA public key matches this hash (format: "<type>:<value>").',
        kind="strings",
    ),
    FlagSpec(
        "discovery-token-unsafe-skip-ca-verification",
        "For token-based discovery, allow joining without --discovery-token-ca-cert-hash pinning.",
        False,
        "bool",
    ),
    FlagSpec(
        "tls-bootstrap-token",
        "Specify the token used to temporarily authenticate with the Kubernetes Control Plane while joining the node.",
    ),
    FlagSpec("force", "Reset the node without prompting for confirmation.", False, "bool"),
    FlagSpec("cleanup-tmp-dir", 'Cleanup the "/etc/kubernetes/tmp" directory', False, "bool"),
):
    FLAGS[_spec.name] = _spec

#: Flags whose help text differs in `join` (kubeadm declares them separately there).
JOIN_FLAG_OVERRIDES: dict[str, FlagSpec] = {
    "token": FlagSpec(
        "token", "Use this token for both discovery-token and tls-bootstrap-token when those values are not provided."
    ),
    "apiserver-advertise-address": FlagSpec(
        "apiserver-advertise-address",
        "If the node should host a new control plane instance, the IP address the API Server will advertise it's "
        "listening on. If not set the default network interface will be used.",
    ),
    "apiserver-bind-port": FlagSpec(
        "apiserver-bind-port",
        "If the node should host a new control plane instance, the port for the API Server to bind to.",
        c.KUBE_APISERVER_PORT,
        "int",
    ),
    "certificate-key": FlagSpec("certificate-key", "Use this key to decrypt the certificate secrets uploaded by init."),
}

#: The flags of `kubeadm join`, in kubeadm's help order.
JOIN_FLAGS: tuple[str, ...] = (
    "apiserver-advertise-address",
    "apiserver-bind-port",
    "certificate-key",
    "config",
    "control-plane",
    "cri-socket",
    "discovery-file",
    "discovery-token",
    "discovery-token-ca-cert-hash",
    "discovery-token-unsafe-skip-ca-verification",
    "dry-run",
    "ignore-preflight-errors",
    "node-name",
    "patches",
    "skip-phases",
    "tls-bootstrap-token",
    "token",
)


def join_option(name: str) -> Decorator:
    """The click option of a `join` flag (join's own help text where kubeadm has one)."""
    spec = JOIN_FLAG_OVERRIDES.get(name)
    return spec.decorator() if spec else option(name)
