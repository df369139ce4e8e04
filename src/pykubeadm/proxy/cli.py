"""`pykubeadm component kube-proxy <flags>`: the built-in kube-proxy, run by the kubelet for `registry.k8s.io/kube-proxy`.

Accepts kube-proxy v1.33's flags with its defaults. `--config` is read first; flags given explicitly on the command line
override it, as kube-proxy does. An unknown flag is kube-proxy's (cobra's) `Error: unknown flag: --x` with exit code 1;
an invalid configuration is `failed validate: …`. `--cleanup` removes the nftables table (`ip/ip6 kube-proxy`) and
exits; `--write-config-to` writes the defaulted configuration and exits; `--version` prints the version.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import socket
import sys
from datetime import timedelta
from typing import Any

import click
import yaml
from click.core import ParameterSource

from pykubeadm import constants as c
from pykubeadm.controllers.app.daemon import configure_logging, run_until_signalled
from pykubeadm.controllers.app.flags import GoBool, GoDuration
from pykubeadm.proxy import nftables
from pykubeadm.proxy.config import ConfigError, parse_config
from pykubeadm.util.goduration import format_duration
from pykubeadm.util.yamlload import load_yaml

__all__ = ["command", "main_options"]

log = logging.getLogger("kube-proxy")

#: flag (click name) → path in KubeProxyConfiguration, for flags that override the config file.
_OVERRIDES: dict[str, tuple[str, ...]] = {
    "bind_address": ("bindAddress",),
    "healthz_bind_address": ("healthzBindAddress",),
    "metrics_bind_address": ("metricsBindAddress",),
    "hostname_override": ("hostnameOverride",),
    "kubeconfig": ("clientConnection", "kubeconfig"),
    "kube_api_content_type": ("clientConnection", "contentType"),
    "kube_api_qps": ("clientConnection", "qps"),
    "kube_api_burst": ("clientConnection", "burst"),
    "proxy_mode": ("mode",),
    "cluster_cidr": ("clusterCIDR",),
    "config_sync_period": ("configSyncPeriod",),
    "iptables_masquerade_bit": ("iptables", "masqueradeBit"),
    "iptables_sync_period": ("iptables", "syncPeriod"),
    "iptables_min_sync_period": ("iptables", "minSyncPeriod"),
    "masquerade_all": ("iptables", "masqueradeAll"),
    "nodeport_addresses": ("nodePortAddresses",),
    "oom_score_adj": ("oomScoreAdj",),
    "proxy_port_range": ("portRange",),
    "detect_local_mode": ("detectLocalMode",),
}

_OPTIONS: list[tuple[str, dict[str, Any]]] = [
    ("--bind-address", {"default": "0.0.0.0"}),
    ("--bind-address-hard-fail", {"type": GoBool(), "is_flag": False, "flag_value": "true", "default": False}),
    ("--cleanup", {"type": GoBool(), "is_flag": False, "flag_value": "true", "default": False}),
    ("--cluster-cidr", {"default": ""}),
    ("--config", {"default": ""}),
    ("--config-sync-period", {"type": GoDuration(), "default": "15m0s"}),
    ("--conntrack-max-per-core", {"type": int, "default": 32768}),
    ("--conntrack-min", {"type": int, "default": 131072}),
    ("--conntrack-tcp-be-liberal", {"type": GoBool(), "is_flag": False, "flag_value": "true", "default": False}),
    ("--conntrack-tcp-timeout-close-wait", {"type": GoDuration(), "default": "1h0m0s"}),
    ("--conntrack-tcp-timeout-established", {"type": GoDuration(), "default": "24h0m0s"}),
    ("--conntrack-udp-timeout", {"type": GoDuration(), "default": "0s"}),
    ("--conntrack-udp-timeout-stream", {"type": GoDuration(), "default": "0s"}),
    ("--detect-local-mode", {"default": ""}),
    ("--feature-gates", {"default": ""}),
    ("--healthz-bind-address", {"default": "0.0.0.0:10256"}),
    ("--hostname-override", {"default": ""}),
    ("--init-only", {"type": GoBool(), "is_flag": False, "flag_value": "true", "default": False}),
    ("--iptables-localhost-nodeports", {"type": GoBool(), "is_flag": False, "flag_value": "true", "default": True}),
    ("--iptables-masquerade-bit", {"type": int, "default": 14}),
    ("--iptables-min-sync-period", {"type": GoDuration(), "default": "1s"}),
    ("--iptables-sync-period", {"type": GoDuration(), "default": "30s"}),
    ("--ipvs-exclude-cidrs", {"default": ""}),
    ("--ipvs-min-sync-period", {"type": GoDuration(), "default": "0s"}),
    ("--ipvs-scheduler", {"default": ""}),
    ("--ipvs-strict-arp", {"type": GoBool(), "is_flag": False, "flag_value": "true", "default": False}),
    ("--ipvs-sync-period", {"type": GoDuration(), "default": "30s"}),
    ("--ipvs-tcp-timeout", {"type": GoDuration(), "default": "0s"}),
    ("--ipvs-tcpfin-timeout", {"type": GoDuration(), "default": "0s"}),
    ("--ipvs-udp-timeout", {"type": GoDuration(), "default": "0s"}),
    ("--kube-api-burst", {"type": int, "default": 10}),
    ("--kube-api-content-type", {"default": "application/vnd.kubernetes.protobuf"}),
    ("--kube-api-qps", {"type": float, "default": 5.0}),
    ("--kubeconfig", {"default": ""}),
    ("--log-flush-frequency", {"type": GoDuration(), "default": "5s"}),
    ("--logging-format", {"default": "text"}),
    ("--masquerade-all", {"type": GoBool(), "is_flag": False, "flag_value": "true", "default": False}),
    ("--master", {"default": ""}),
    ("--metrics-bind-address", {"default": "127.0.0.1:10249"}),
    ("--nodeport-addresses", {"default": ""}),
    ("--oom-score-adj", {"type": int, "default": -999}),
    ("--pod-bridge-interface", {"default": ""}),
    ("--pod-interface-name-prefix", {"default": ""}),
    ("--profiling", {"type": GoBool(), "is_flag": False, "flag_value": "true", "default": False}),
    ("--proxy-mode", {"default": ""}),
    ("--proxy-port-range", {"default": ""}),
    ("--show-hidden-metrics-for-version", {"default": ""}),
    ("--version", {"type": GoBool(), "is_flag": False, "flag_value": "true", "default": False}),
    ("--vmodule", {"default": ""}),
    ("--write-config-to", {"default": ""}),
]


def main_options(f: Any) -> Any:
    for name, kwargs in reversed(_OPTIONS):
        f = click.option(name, **kwargs)(f)
    return click.option("-v", "--v", "verbosity", type=int, default=0)(f)


def _flag_value(name: str, value: Any) -> Any:
    if hasattr(value, "total_seconds"):
        return format_duration(value)
    if name == "nodeport_addresses":
        return [s.strip() for s in str(value).split(",") if s.strip()]
    return value


def _document(ctx: click.Context, flags: dict[str, Any]) -> dict[str, Any]:
    """The config file (or an empty v1alpha1 document) with explicitly given flags applied over it."""
    if flags["config"]:
        with open(flags["config"]) as fh:
            doc = load_yaml(fh) or {}
    else:
        doc = {"apiVersion": c.KUBE_PROXY_CONFIG_API_VERSION, "kind": "KubeProxyConfiguration"}
    doc = copy.deepcopy(doc) if isinstance(doc, dict) else doc
    for name, path in _OVERRIDES.items():
        explicit = ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE
        if flags["config"] and not explicit:
            continue
        value = _flag_value(name, flags[name])
        if value in ("", None, []) and not explicit:
            continue
        node = doc
        for part in path[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[path[-1]] = value
    return doc


def _defaulted(doc: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """The document with kube-proxy's defaults filled in where it left zero values (what --write-config-to writes)."""
    out = copy.deepcopy(doc)
    out["bindAddress"] = cfg.bind_address
    out["healthzBindAddress"] = cfg.healthz_bind_address
    out["metricsBindAddress"] = cfg.metrics_bind_address
    out["configSyncPeriod"] = format_duration(timedelta(seconds=cfg.config_sync_period))
    conn = out.setdefault("clientConnection", {})
    conn["contentType"] = conn.get("contentType") or "application/vnd.kubernetes.protobuf"
    conn["qps"] = conn.get("qps") or 5
    conn["burst"] = conn.get("burst") or 10
    if out.get("oomScoreAdj") is None:
        out["oomScoreAdj"] = -999
    for section in ("iptables", "nftables"):
        sec = out.setdefault(section, {}) or {}
        out[section] = sec
        if sec.get("masqueradeBit") is None:
            sec["masqueradeBit"] = 14
        if sec.get("syncPeriod") in (None, "", "0s"):
            sec["syncPeriod"] = "30s"
        if sec.get("minSyncPeriod") in (None, "", "0s"):
            sec["minSyncPeriod"] = "1s"
    return out


def _fail(message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)


@click.command(
    name="kube-proxy",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": ["-h", "--help"]},
)
@main_options
@click.pass_context
def command(ctx: click.Context, verbosity: int, **flags: Any) -> None:
    """The Kubernetes network proxy runs on each node. It proxies Services' ClusterIPs and NodePorts to endpoints."""
    if ctx.args:
        arg = ctx.args[0]
        if arg.startswith("-"):
            _fail(f"unknown flag: {arg.split('=', 1)[0]}\nRun 'kube-proxy --help' for usage.")
        _fail(f'"kube-proxy" does not take any arguments, got {ctx.args!r}')
    configure_logging(verbosity)
    if flags["version"]:
        click.echo(f"Kubernetes {os.environ.get('PYKUBEADM_COMPONENT_VERSION') or c.KUBERNETES_VERSION}")
        return
    if flags["cleanup"]:
        sys.exit(1 if nftables.cleanup() else 0)
    try:
        doc = _document(ctx, flags)
        if not isinstance(doc, dict):
            raise ConfigError(f"failed to decode config file {flags['config']!r}: not a KubeProxyConfiguration object")
        cfg = parse_config(doc)
    except OSError as err:
        _fail(f"failed complete: failed to read config file {flags['config']!r}: {err.strerror or err}")
        return
    except (yaml.YAMLError, ConfigError) as err:
        _fail(f"failed validate: {err}")
        return
    if flags["write_config_to"]:
        with open(flags["write_config_to"], "w") as fh:
            yaml.safe_dump(_defaulted(doc, cfg), fh, sort_keys=True)
        log.info('"Wrote configuration" file="%s"', flags["write_config_to"])
        return
    if flags["init_only"]:
        log.info('"System initialized and --init-only specified"')
        return
    hostname = (cfg.hostname_override or socket.gethostname()).strip().lower()
    kubeconfig = cfg.kubeconfig
    if not kubeconfig:
        _fail(
            "failed complete: neither --kubeconfig nor --master was specified (in-cluster configuration is not supported)"
        )
    if not os.path.exists(kubeconfig) and flags["config"]:
        # Built-in mode without a mount namespace: the kubeconfig of the same ConfigMap volume sits beside the config.
        beside = os.path.join(os.path.dirname(flags["config"]), os.path.basename(kubeconfig))
        if os.path.exists(beside):
            kubeconfig = beside
    from pykubeadm.proxy.server import ProxyServer

    log.info(
        '"Starting kube-proxy" version="%s"', os.environ.get("PYKUBEADM_COMPONENT_VERSION") or c.KUBERNETES_VERSION
    )
    server = ProxyServer(cfg, hostname, kubeconfig)
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(run_until_signalled(server.run, log))
