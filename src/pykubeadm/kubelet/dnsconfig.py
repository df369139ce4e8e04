"""A Pod's /etc/resolv.conf and /etc/hosts, as the kubelet (and its runtime) write them.

Used by the pod worker, which writes both into the Pod's directory and bind-mounts them at /etc/resolv.conf and
/etc/hosts of every sandboxed container. resolv.conf follows the kubelet's `GetPodDNS`: the dnsPolicy picks the
nameservers, searches and options (ClusterFirst: `clusterDNS`, `<ns>.svc.<domain> svc.<domain> <domain>` + the
host's search domains, `ndots:5`; ClusterFirstWithHostNet the same for host-network Pods; a host-network ClusterFirst
Pod and Default: the host's file, KubeletConfiguration `resolvConf`; None: nothing), then `dnsConfig` is merged in
(nameservers and searches appended without duplicates, options by name, the Pod's value winning); the file is
rendered as containerd does (search, nameservers, options). /etc/hosts is the kubelet's managed hosts file: its header,
the localhost lines, the Pod IP with its hostname (and `hostname.subdomain.ns.svc.domain`), the hostAliases; a
host-network Pod gets the node's /etc/hosts plus its hostAliases. `write_pod_files` writes both into the Pod's
directory (`resolv.conf`, `etc-hosts`, the kubelet's name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "DnsConfig",
    "hosts_file",
    "parse_resolv_conf",
    "pod_dns",
    "pod_hostname",
    "render_resolv_conf",
    "write_pod_files",
]

#: The kubelet's limits (validation.MaxDNSSearchPaths, MaxDNSSearchListChars, MaxDNSNameservers).
MAX_SEARCHES = 32
MAX_SEARCH_CHARS = 2048
MAX_NAMESERVERS = 3
_HOSTNAME_MAX = 63

_HOSTS_HEADER = "# Kubernetes-managed hosts file.\n"
_HOSTS_HEADER_HOST_NETWORK = "# Kubernetes-managed hosts file (host network).\n"
_LOCALHOST = (
    "127.0.0.1\tlocalhost\n"
    "::1\tlocalhost ip6-localhost ip6-loopback\n"
    "fe00::0\tip6-localnet\n"
    "fe00::0\tip6-mcastprefix\n"
    "fe00::1\tip6-allnodes\n"
    "fe00::2\tip6-allrouters\n"
)


@dataclass
class DnsConfig:
    """What resolv.conf says: nameservers, search domains, options (`ndots:5`, `edns0`)."""

    nameservers: list[str] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)


def parse_resolv_conf(text: str) -> DnsConfig:
    """The host's resolv.conf as the kubelet reads it: every `nameserver`, the last `search` line ("." and trailing
    dots dropped), every `options` field."""
    out = DnsConfig()
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].split(";", 1)[0]
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "nameserver" and len(fields) > 1:
            out.nameservers.append(fields[1])
        elif fields[0] == "search":
            out.searches = [s.rstrip(".") for s in fields[1:] if s != "."]
        elif fields[0] == "options":
            out.options.extend(fields[1:])
    return out


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _merge_options(base: Sequence[str], extra: Sequence[Mapping[str, Any]]) -> list[str]:
    """The kubelet's mergeDNSOptions: one option per name, a later value replacing an earlier one."""
    merged: dict[str, str | None] = {}
    for opt in base:
        name, sep, value = opt.partition(":")
        merged[name] = value if sep else None
    for option in extra:
        name = str(option.get("name") or "")
        if name:
            merged[name] = str(option["value"]) if option.get("value") is not None else None
    return [name if value is None else f"{name}:{value}" for name, value in merged.items()]


def _fit_searches(searches: list[str]) -> list[str]:
    """At most 32 search domains and 2048 characters (the kubelet drops the rest and warns)."""
    out: list[str] = []
    used = 0
    for s in searches[:MAX_SEARCHES]:
        if used + len(s) + (1 if out else 0) > MAX_SEARCH_CHARS:
            break
        used += len(s) + (1 if out else 0)
        out.append(s)
    return out


def pod_dns(
    pod: Mapping[str, Any], cluster_dns: Sequence[str], cluster_domain: str, host: DnsConfig
) -> tuple[DnsConfig, str]:
    """(the Pod's DNS configuration, a warning or ""): dnsPolicy, then dnsConfig merged in."""
    spec = pod.get("spec") or {}
    ns = str((pod.get("metadata") or {}).get("namespace") or "default")
    policy = str(spec.get("dnsPolicy") or "ClusterFirst")
    host_network = bool(spec.get("hostNetwork"))
    warning = ""
    if policy == "ClusterFirstWithHostNet" or (policy == "ClusterFirst" and not host_network):
        kind = "cluster"
    elif policy == "None":
        kind = "none"
    else:
        kind = "host"
    if kind == "cluster" and not cluster_dns:
        warning = (
            f'kubelet does not have ClusterDNS IP configured and cannot create Pod using "{policy}" policy. '
            'Falling back to "Default" policy.'
        )
        kind = "host"
    if kind == "cluster":
        searches = [f"{ns}.svc.{cluster_domain}", f"svc.{cluster_domain}", cluster_domain] if cluster_domain else []
        cfg = DnsConfig(list(cluster_dns), _unique([*searches, *host.searches]), ["ndots:5"])
    elif kind == "host":
        cfg = DnsConfig(list(host.nameservers), list(host.searches), list(host.options))
    else:
        cfg = DnsConfig()
    extra = spec.get("dnsConfig") or {}
    if extra:
        cfg.nameservers = _unique([*cfg.nameservers, *(str(x) for x in extra.get("nameservers") or [])])
        cfg.searches = _unique([*cfg.searches, *(str(x) for x in extra.get("searches") or [])])
        cfg.options = _merge_options(cfg.options, extra.get("options") or [])
    if len(cfg.nameservers) > MAX_NAMESERVERS:
        applied = " ".join(cfg.nameservers[:MAX_NAMESERVERS])
        warning = warning or (
            "Nameserver limits were exceeded, some nameservers have been omitted, "
            f"the applied nameserver line is: {applied}"
        )
        cfg.nameservers = cfg.nameservers[:MAX_NAMESERVERS]
    fitted = _fit_searches(cfg.searches)
    if fitted != cfg.searches:
        warning = warning or (
            f"Search Line limits were exceeded, some search paths have been omitted, "
            f"the applied search line is: {' '.join(fitted)}"
        )
        cfg.searches = fitted
    return cfg, warning


def render_resolv_conf(cfg: DnsConfig) -> str:
    """resolv.conf as containerd writes a sandbox's: `search`, one `nameserver` per server, `options`."""
    out = ""
    if cfg.searches:
        out += f"search {' '.join(cfg.searches)}\n"
    for server in cfg.nameservers:
        out += f"nameserver {server}\n"
    if cfg.options:
        out += f"options {' '.join(cfg.options)}\n"
    return out


def pod_hostname(pod: Mapping[str, Any], cluster_domain: str) -> tuple[str, str]:
    """(hostname, domain): spec.hostname or the Pod's name (63 characters at most, no trailing '-' or '.'), and
    `<subdomain>.<namespace>.svc.<clusterDomain>` when spec.subdomain is set (the kubelet's
    GeneratePodHostNameAndDomain)."""
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    hostname = str(spec.get("hostname") or meta.get("name") or "")
    if len(hostname) > _HOSTNAME_MAX:
        hostname = hostname[:_HOSTNAME_MAX].rstrip("-.")
    domain = ""
    if spec.get("subdomain"):
        ns = str(meta.get("namespace") or "default")
        domain = f"{spec['subdomain']}.{ns}.svc.{cluster_domain}"
    return hostname, domain


def _aliases(pod: Mapping[str, Any]) -> str:
    aliases = (pod.get("spec") or {}).get("hostAliases") or []
    if not aliases:
        return ""
    out = "\n# Entries added by HostAliases.\n"
    for alias in aliases:
        out += f"{alias.get('ip', '')}\t{chr(9).join(str(h) for h in alias.get('hostnames') or [])}\n"
    return out


def hosts_file(pod: Mapping[str, Any], pod_ips: Sequence[str], cluster_domain: str, node_hosts: str = "") -> str:
    """The kubelet's managed /etc/hosts for the Pod (host network: the node's file under the host-network header)."""
    if (pod.get("spec") or {}).get("hostNetwork"):
        return _HOSTS_HEADER_HOST_NETWORK + node_hosts + _aliases(pod)
    hostname, domain = pod_hostname(pod, cluster_domain)
    out = _HOSTS_HEADER + _LOCALHOST
    for ip in pod_ips:
        out += f"{ip}\t{hostname}.{domain}\t{hostname}\n" if domain else f"{ip}\t{hostname}\n"
    return out + _aliases(pod)


def write_pod_files(
    pod: Mapping[str, Any],
    pod_dir: Path,
    pod_ip: str,
    cluster_dns: Sequence[str],
    cluster_domain: str,
    resolv_conf: Path | None,
    node_hosts_file: Path = Path("/etc/hosts"),
) -> tuple[Path, Path, list[tuple[str, str]]]:
    """Write the Pod's resolv.conf and hosts file into `pod_dir`: (resolv.conf, etc-hosts, warning events as
    (reason, message): MissingClusterDNS, DNSConfigForming)."""
    warnings: list[tuple[str, str]] = []
    host_text = ""
    if resolv_conf is not None:
        try:
            host_text = resolv_conf.read_text()
        except OSError as e:
            warnings.append(("DNSConfigForming", f"Unable to read the host's resolv.conf {resolv_conf}: {e}"))
    cfg, warning = pod_dns(pod, cluster_dns, cluster_domain, parse_resolv_conf(host_text))
    if warning:
        warnings.append(("MissingClusterDNS" if "ClusterDNS IP" in warning else "DNSConfigForming", warning))
    node_hosts = ""
    if (pod.get("spec") or {}).get("hostNetwork"):
        try:
            node_hosts = node_hosts_file.read_text()
        except OSError:
            node_hosts = ""
    resolv, hosts = pod_dir / "resolv.conf", pod_dir / "etc-hosts"
    pod_dir.mkdir(parents=True, exist_ok=True)
    for path, text in (
        (resolv, render_resolv_conf(cfg)),
        (hosts, hosts_file(pod, [pod_ip], cluster_domain, node_hosts)),
    ):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        tmp.chmod(0o644)
        tmp.replace(path)
    return resolv, hosts, warnings
