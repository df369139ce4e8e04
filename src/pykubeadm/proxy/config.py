"""kube-proxy's configuration: KubeProxyConfiguration v1alpha1 read, defaulted and validated as kube-proxy does it.

Used by `proxy.cli` (the `--config` file plus the flags that override it) and by the proxiers. The document is the one
kubeadm writes into the `kube-proxy` ConfigMap (`api.componentconfigs.default_kube_proxy_config`), so zero values
(`0s`, `""`, `null`) mean "use kube-proxy's default" exactly as Go's defaulting treats them. Validation returns every
problem at once in kube-proxy's words (`KubeProxyConfiguration.Mode.ProxyMode: Invalid value: "x": must be …`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pykubeadm import constants as c
from pykubeadm.util.goduration import parse_duration
from pykubeadm.util.yamlload import load_yaml

__all__ = [
    "MODE_IPTABLES",
    "MODE_IPVS",
    "MODE_NFTABLES",
    "ConfigError",
    "ProxyConfig",
    "load_config",
    "parse_config",
]

MODE_IPTABLES = "iptables"
MODE_IPVS = "ipvs"
MODE_NFTABLES = "nftables"
#: Modes kube-proxy v1.33 accepts on Linux ("" = the best available, iptables).
VALID_MODES = (MODE_IPTABLES, MODE_IPVS, MODE_NFTABLES)

DEFAULT_HEALTHZ_PORT = 10256
DEFAULT_METRICS_PORT = 10249


class ConfigError(Exception):
    """The configuration cannot be read or is invalid; the message is kube-proxy's."""


@dataclass
class ProxyConfig:
    """The settings our kube-proxy uses, after defaulting (durations in seconds)."""

    mode: str = ""
    bind_address: str = "0.0.0.0"
    healthz_bind_address: str = f"0.0.0.0:{DEFAULT_HEALTHZ_PORT}"
    metrics_bind_address: str = f"127.0.0.1:{DEFAULT_METRICS_PORT}"
    kubeconfig: str = ""
    hostname_override: str = ""
    cluster_cidr: str = ""
    config_sync_period: float = 15 * 60.0
    sync_period: float = 30.0
    min_sync_period: float = 1.0
    masquerade_bit: int = 14
    masquerade_all: bool = False
    node_port_addresses: list[str] = field(default_factory=list)
    udp_idle_timeout: float = 250e-3
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def mode_section(self) -> dict[str, Any]:
        return dict(self.raw.get(MODE_NFTABLES if self.mode == MODE_NFTABLES else MODE_IPTABLES) or {})


def _duration(value: Any, default: float, path: str, errs: list[str]) -> float:
    if value in (None, "", "0s", 0):
        return default
    try:
        return parse_duration(str(value)).total_seconds()
    except ValueError as err:
        errs.append(f"{path}: Invalid value: {value!r}: {err}")
        return default


def _host_port(value: str, path: str, errs: list[str]) -> None:
    host, sep, port = value.rpartition(":")
    if not sep:
        errs.append(f'{path}: Invalid value: "{value}": must be IP:port')
        return
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        errs.append(f'{path}: Invalid value: "{host}": must be a valid IP')
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        errs.append(f'{path}: Invalid value: "{port}": must be a valid port')


def _with_port(value: str, port: int) -> str:
    """kube-proxy appends its default port to a bare IP (`0.0.0.0` → `0.0.0.0:10256`)."""
    if not value:
        return value
    try:
        ip = ipaddress.ip_address(value.strip("[]"))
    except ValueError:
        return value
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


def parse_config(doc: dict[str, Any]) -> ProxyConfig:
    """Default and validate a KubeProxyConfiguration document; ConfigError lists every problem."""
    kind, version = doc.get("kind"), doc.get("apiVersion")
    if kind != "KubeProxyConfiguration" or version != c.KUBE_PROXY_CONFIG_API_VERSION:
        raise ConfigError(
            f'no kind "{kind}" is registered for version "{version}" in scheme '
            '"k8s.io/kubernetes/pkg/proxy/apis/config/scheme/scheme.go:28"'
        )
    errs: list[str] = []
    p = "KubeProxyConfiguration"
    cfg = ProxyConfig(raw=doc)
    cfg.mode = str(doc.get("mode") or "")
    if cfg.mode not in VALID_MODES and cfg.mode != "":
        errs.append(
            f'{p}.Mode.ProxyMode: Invalid value: "{cfg.mode}": must be {",".join(VALID_MODES)} or blank '
            "(blank means the best-available proxy [currently iptables])"
        )
    cfg.bind_address = str(doc.get("bindAddress") or "0.0.0.0")
    try:
        ipaddress.ip_address(cfg.bind_address)
    except ValueError:
        errs.append(
            f'{p}.BindAddress: Invalid value: "{cfg.bind_address}": not a valid textual representation of an IP address'
        )
    cfg.healthz_bind_address = _with_port(
        str(doc.get("healthzBindAddress") or f"0.0.0.0:{DEFAULT_HEALTHZ_PORT}"), DEFAULT_HEALTHZ_PORT
    )
    cfg.metrics_bind_address = _with_port(
        str(doc.get("metricsBindAddress") or f"127.0.0.1:{DEFAULT_METRICS_PORT}"), DEFAULT_METRICS_PORT
    )
    _host_port(cfg.healthz_bind_address, f"{p}.HealthzBindAddress", errs)
    _host_port(cfg.metrics_bind_address, f"{p}.MetricsBindAddress", errs)
    conn = doc.get("clientConnection") or {}
    cfg.kubeconfig = str(conn.get("kubeconfig") or "")
    if int(conn.get("burst") or 0) < 0:
        errs.append(
            f"{p}.ClientConnection.Burst: Invalid value: {conn.get('burst')}: must be greater than or equal to 0"
        )
    cfg.hostname_override = str(doc.get("hostnameOverride") or "")
    cfg.cluster_cidr = str(doc.get("clusterCIDR") or "")
    for cidr in filter(None, cfg.cluster_cidr.split(",")):
        try:
            ipaddress.ip_network(cidr.strip(), strict=False)
        except ValueError:
            errs.append(
                f'{p}.ClusterCIDR: Invalid value: "{cfg.cluster_cidr}": must be a valid CIDR block '
                "(e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)"
            )
    cfg.config_sync_period = _duration(doc.get("configSyncPeriod"), 15 * 60.0, f"{p}.ConfigSyncPeriod", errs)
    section_name = "NFTables" if cfg.mode == MODE_NFTABLES else "IPTables"
    section = cfg.mode_section
    sp = f"{p}.KubeProxy{section_name}Configuration"
    cfg.sync_period = _duration(section.get("syncPeriod"), 30.0, f"{sp}.SyncPeriod", errs)
    cfg.min_sync_period = _duration(section.get("minSyncPeriod"), 1.0, f"{sp}.MinSyncPeriod", errs)
    if cfg.min_sync_period > cfg.sync_period:
        errs.append(
            f'{sp}.SyncPeriod: Invalid value: "{section.get("minSyncPeriod")}": must be greater than or equal to '
            f"{sp}.MinSyncPeriod"
        )
    bit = section.get("masqueradeBit")
    cfg.masquerade_bit = 14 if bit is None else int(bit)
    if not 0 <= cfg.masquerade_bit <= 31:
        errs.append(f"{sp}.MasqueradeBit: Invalid value: {cfg.masquerade_bit}: must be within the range [0, 31]")
    cfg.masquerade_all = bool(section.get("masqueradeAll"))
    cfg.node_port_addresses = [str(a) for a in doc.get("nodePortAddresses") or []]
    for addr in cfg.node_port_addresses:
        if addr == "primary":
            continue
        try:
            ipaddress.ip_network(addr, strict=False)
        except ValueError:
            errs.append(f"{p}.NodePortAddresses: Invalid value: {cfg.node_port_addresses}: must be a valid IP block")
            break
    oom = doc.get("oomScoreAdj")
    if oom is not None and not -1000 <= int(oom) <= 1000:
        errs.append(f"{p}.OOMScoreAdj: Invalid value: {oom}: must be within the range [-1000, 1000]")
    if errs:
        raise ConfigError(", ".join(errs) if len(errs) == 1 else "[" + ", ".join(errs) + "]")
    return cfg


def load_config(path: str | Path) -> ProxyConfig:
    """Read `--config`: one KubeProxyConfiguration YAML/JSON document."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ConfigError(f"failed to read config file {str(path)!r}: {err.strerror or err}") from err
    try:
        doc = load_yaml(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"failed to decode config file {str(path)!r}: {err}") from err
    if not isinstance(doc, dict):
        raise ConfigError(f"failed to decode config file {str(path)!r}: not a KubeProxyConfiguration object")
    return parse_config(doc)
