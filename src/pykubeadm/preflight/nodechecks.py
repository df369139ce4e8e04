"""The lists of checks kubeadm runs for init and join (RunInitNodeChecks, RunJoinNodeChecks, the root check), built from
explicit parameters so init, join, reset and upgrade can share them.

`host_runtime` says whether this node runs a real kubelet and container runtime (host mode). pykubeadm's built-in mode
(a node under `--root-dir`, our own kubelet running control-plane Pods as processes) has no container runtime, CNI or
kubelet service, so the checks that only guard those — CRI, the required commands, SystemVerification,
Service-Kubelet, Firewalld and the IP-forwarding FileContent checks — are left out there (the CRI check stays for a
runtime of the node's own, whose socket is under its root: a lab node's containerd); KubeletVersion reads the
version the node's built-in kubelet was installed for (kubelet.package); everything else runs as in kubeadm. The root check is only wanted in host mode too: a node under a root dir needs no privileges.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field

from pykubeadm import constants as c
from pykubeadm.layout import Layout
from pykubeadm.preflight.checks import (
    Checker,
    ContainerRuntimeCheck,
    DirAvailableCheck,
    FileAvailableCheck,
    FileContentCheck,
    FileExistingCheck,
    FirewalldCheck,
    HostnameCheck,
    HTTPProxyCheck,
    HTTPProxyCIDRCheck,
    InPathCheck,
    InstalledKubeletVersionCheck,
    IsPrivilegedUserCheck,
    KubeletVersionCheck,
    KubernetesVersionCheck,
    MemCheck,
    NumCPUCheck,
    PortOpenCheck,
    ServiceCheck,
    SwapCheck,
    SystemVerificationCheck,
)
from pykubeadm.preflight.host import Host

__all__ = [
    "CONTROL_PLANE_MEM_MB",
    "CONTROL_PLANE_NUM_CPU",
    "IPV4_FORWARD",
    "IPV6_FORWARD",
    "InitCheckParams",
    "JoinCheckParams",
    "common_checks",
    "init_node_checks",
    "join_node_checks",
    "node_local_runtime",
    "root_check",
]

CONTROL_PLANE_NUM_CPU = 2
CONTROL_PLANE_MEM_MB = 1700
IPV4_FORWARD = "/proc/sys/net/ipv4/ip_forward"
IPV6_FORWARD = "/proc/sys/net/ipv6/conf/default/forwarding"
#: (executable, mandatory) of the InPath checks.
REQUIRED_EXECUTABLES: tuple[tuple[str, bool], ...] = (
    ("ip", True),
    ("iptables", True),
    ("mount", True),
    ("nsenter", True),
    ("ebtables", False),
    ("ethtool", False),
    ("socat", False),
    ("tc", False),
    ("touch", False),
)


def root_check(host: Host) -> list[Checker]:
    """kubeadm runs this alone, first (RunRootCheckOnly)."""
    return [IsPrivilegedUserCheck(host)]


def _families(*addresses: str) -> set[int]:
    fams: set[int] = set()
    for a in addresses:
        for part in a.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                fams.add(ipaddress.ip_network(part, strict=False).version)
            except ValueError:
                continue
    return fams


def common_checks(
    host: Host, layout: Layout, *, node_name: str, cri_socket: str, kubernetes_version: str, kubelet_address: str
) -> list[Checker]:
    """The checks every node runs (kubeadm's addCommonChecks), minus the host-runtime ones in built-in mode."""
    checks: list[Checker] = [
        ContainerRuntimeCheck(host, cri_socket),
        SwapCheck(host),
    ]
    checks += [InPathCheck(host, exe, mandatory) for exe, mandatory in REQUIRED_EXECUTABLES]
    checks += [
        SystemVerificationCheck(host),
        HostnameCheck(host, node_name),
        KubeletVersionCheck(host, kubernetes_version),
        ServiceCheck(host, "kubelet"),
        PortOpenCheck(host, c.KUBELET_PORT, kubelet_address),
    ]
    return checks


_HOST_RUNTIME_ONLY = (
    ContainerRuntimeCheck,
    InPathCheck,
    SystemVerificationCheck,
    KubeletVersionCheck,
    ServiceCheck,
    FirewalldCheck,
    FileContentCheck,
)


def node_local_runtime(layout: Layout, cri_socket: str) -> bool:
    """A built-in node's CRI endpoint names a socket in (or leading into) its root: a container runtime of the node's own (a lab
    node's containerd), which kubeadm asks as it asks a host's."""
    return layout.owns(cri_socket.removeprefix("unix://"))


def _for_mode(checks: list[Checker], host_runtime: bool, layout: Layout) -> list[Checker]:
    """Built-in mode: without the host-runtime checks (but the CRI check of a node-local runtime), and KubeletVersion
    reads the installed built-in kubelet."""
    if host_runtime:
        return checks
    return [
        InstalledKubeletVersionCheck(layout, ch.kubernetes_version) if isinstance(ch, KubeletVersionCheck) else ch
        for ch in checks
        if isinstance(ch, KubeletVersionCheck)
        or not isinstance(ch, _HOST_RUNTIME_ONLY)
        or (isinstance(ch, ContainerRuntimeCheck) and node_local_runtime(layout, ch.cri_socket))
    ]


@dataclass(frozen=True)
class InitCheckParams:
    """What the init checks depend on (node paths; `layout` maps them to this machine)."""

    layout: Layout
    advertise_address: str
    node_name: str
    bind_port: int = c.KUBE_APISERVER_PORT
    kubernetes_version: str = c.KUBERNETES_VERSION
    kubeadm_version: str = c.KUBEADM_VERSION
    service_subnet: str = c.DEFAULT_SERVICE_SUBNET
    pod_subnet: str = ""
    cri_socket: str = c.DEFAULT_CRI_SOCKET
    #: Local etcd data dir, or None with external etcd.
    etcd_data_dir: str | None = c.DEFAULT_ETCD_DATA_DIR
    #: (caFile, certFile, keyFile) of external etcd.
    external_etcd_files: tuple[str, ...] = field(default_factory=tuple)
    host_runtime: bool = True
    secondary_control_plane: bool = False
    downloaded_certs: bool = False


def init_node_checks(host: Host, p: InitCheckParams) -> list[Checker]:
    """RunInitNodeChecks, in kubeadm's order (the root check is separate: `root_check`)."""
    layout = p.layout
    addr = "" if p.advertise_address in ("0.0.0.0", "::") else p.advertise_address

    def manifest(component: str) -> FileAvailableCheck:
        node_path = f"{c.KUBERNETES_DIR}/{c.MANIFESTS_SUBDIR}/{component}.yaml"
        return FileAvailableCheck(node_path, layout.host(node_path))

    checks: list[Checker] = [
        NumCPUCheck(host, CONTROL_PLANE_NUM_CPU),
        MemCheck(host, CONTROL_PLANE_MEM_MB),
        KubernetesVersionCheck(p.kubeadm_version, p.kubernetes_version),
        FirewalldCheck(host, (p.bind_port, c.KUBELET_PORT)),
        PortOpenCheck(host, p.bind_port, addr),
        PortOpenCheck(host, c.KUBE_SCHEDULER_PORT, addr),
        PortOpenCheck(host, c.KUBE_CONTROLLER_MANAGER_PORT, addr),
        manifest(c.KUBE_APISERVER),
        manifest(c.KUBE_CONTROLLER_MANAGER),
        manifest(c.KUBE_SCHEDULER),
        manifest(c.ETCD),
        HTTPProxyCheck(host, p.advertise_address),
    ]
    for cidr in [s for s in p.service_subnet.split(",") if s] + [s for s in p.pod_subnet.split(",") if s]:
        checks.append(HTTPProxyCIDRCheck(host, cidr.strip()))
    if not p.secondary_control_plane:
        checks += common_checks(
            host,
            layout,
            node_name=p.node_name,
            cri_socket=p.cri_socket,
            kubernetes_version=p.kubernetes_version,
            kubelet_address=addr,
        )
        fams = _families(p.service_subnet, p.pod_subnet, p.advertise_address)
        if 4 in fams:
            checks.append(FileContentCheck(host, IPV4_FORWARD, "1"))
        if 6 in fams:
            checks.append(FileContentCheck(host, IPV6_FORWARD, "1"))
    if p.etcd_data_dir is not None:
        checks += [
            PortOpenCheck(host, c.ETCD_LISTEN_CLIENT_PORT, addr),
            PortOpenCheck(host, c.ETCD_LISTEN_PEER_PORT, addr),
            DirAvailableCheck(p.etcd_data_dir, layout.host(p.etcd_data_dir)),
        ]
    elif not (p.secondary_control_plane and p.downloaded_certs):
        for path in p.external_etcd_files:
            if path:
                checks.append(FileExistingCheck(path, layout.host(path), label="ExternalEtcdClientCertificates"))
    return _for_mode(checks, p.host_runtime, layout)


@dataclass(frozen=True)
class JoinCheckParams:
    layout: Layout
    node_name: str
    discovery_host: str = ""
    ca_cert_path: str = f"{c.DEFAULT_CERTIFICATES_DIR}/ca.crt"
    control_plane: bool = False
    cri_socket: str = c.DEFAULT_CRI_SOCKET
    kubernetes_version: str = c.KUBERNETES_VERSION
    kubelet_address: str = ""
    host_runtime: bool = True


def join_node_checks(host: Host, p: JoinCheckParams) -> list[Checker]:
    """RunJoinNodeChecks (the control-plane part is `init_node_checks(secondary_control_plane=True)`)."""
    layout = p.layout
    kubelet_conf = f"{c.KUBERNETES_DIR}/{c.KUBELET_KUBECONFIG_FILE}"
    bootstrap_conf = f"{c.KUBERNETES_DIR}/{c.KUBELET_BOOTSTRAP_KUBECONFIG_FILE}"
    checks: list[Checker] = [
        FileAvailableCheck(kubelet_conf, layout.host(kubelet_conf)),
        FileAvailableCheck(bootstrap_conf, layout.host(bootstrap_conf)),
    ]
    checks += common_checks(
        host,
        layout,
        node_name=p.node_name,
        cri_socket=p.cri_socket,
        kubernetes_version=p.kubernetes_version,
        kubelet_address=p.kubelet_address,
    )
    if not p.control_plane:
        checks.append(FileAvailableCheck(p.ca_cert_path, layout.host(p.ca_cert_path)))
    if p.discovery_host:
        host_only = p.discovery_host.rsplit(":", 1)[0].strip("[]") if ":" in p.discovery_host else p.discovery_host
        checks.append(HTTPProxyCheck(host, host_only))
        fams = _families(host_only)
        checks.append(FileContentCheck(host, IPV6_FORWARD if 6 in fams else IPV4_FORWARD, "1"))
    return _for_mode(checks, p.host_runtime, layout)


def filter_names(checks: Sequence[Checker]) -> list[str]:
    """The names of `checks` (for help texts and tests)."""
    return [ch.name() for ch in checks]
