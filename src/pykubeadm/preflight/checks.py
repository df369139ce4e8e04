"""kubeadm's preflight checks (preflight/checks.go): each has kubeadm's name (used by --ignore-preflight-errors), reads
the host only through a `Host`, and returns (warnings, errors) with kubeadm's messages.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pykubeadm import constants as c
from pykubeadm.layout import Layout
from pykubeadm.preflight.host import Host
from pykubeadm.preflight.proxy import proxy_for
from pykubeadm.util.endpoint import is_dns1123_subdomain

__all__ = [
    "Checker",
    "ContainerRuntimeCheck",
    "DirAvailableCheck",
    "FileAvailableCheck",
    "FileContentCheck",
    "FileExistingCheck",
    "FirewalldCheck",
    "HTTPProxyCIDRCheck",
    "HTTPProxyCheck",
    "HostnameCheck",
    "InPathCheck",
    "IsPrivilegedUserCheck",
    "KubeletVersionCheck",
    "KubernetesVersionCheck",
    "MemCheck",
    "NumCPUCheck",
    "PortOpenCheck",
    "ServiceCheck",
    "SwapCheck",
    "SystemVerificationCheck",
    "path_label",
]

Result = tuple[list[str], list[str]]
OK: Result = ([], [])
#: The warning of the service checks on a host without systemd.
_NO_INIT_SYSTEM = "no supported init system detected, skipping checking for services"


class Checker(Protocol):
    def name(self) -> str: ...
    def check(self) -> Result: ...


def path_label(path: str) -> str:
    """kubeadm's check-name form of a path: `/etc/kubernetes/x.yaml` → `-etc-kubernetes-x.yaml`."""
    return path.replace("/", "-")


_SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def parse_version(text: str) -> tuple[int, int, int, str]:
    m = _SEMVER.match(text.strip())
    if not m:
        raise ValueError(f'could not parse "{text}" as version')
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) or ""


def _version_key(v: tuple[int, int, int, str]) -> tuple[int, int, int, int, str]:
    # a pre-release sorts before the release
    return v[0], v[1], v[2], 0 if v[3] else 1, v[3]


@dataclass(frozen=True)
class IsPrivilegedUserCheck:
    host: Host

    def name(self) -> str:
        return "IsPrivilegedUser"

    def check(self) -> Result:
        return OK if self.host.euid() == 0 else ([], ["user is not running as root"])


@dataclass(frozen=True)
class NumCPUCheck:
    host: Host
    required: int = 2

    def name(self) -> str:
        return "NumCPU"

    def check(self) -> Result:
        n = self.host.cpu_count()
        if n < self.required:
            return [], [f"the number of available CPUs {n} is less than the required {self.required}"]
        return OK


@dataclass(frozen=True)
class MemCheck:
    host: Host
    mem_mb: int = 1700

    def name(self) -> str:
        return "Mem"

    def check(self) -> Result:
        actual = self.host.mem_total_mb()
        if actual < self.mem_mb:
            return [], [f"the system RAM ({actual} MB) is less than the minimum {self.mem_mb} MB"]
        return OK


@dataclass(frozen=True)
class KubernetesVersionCheck:
    kubeadm_version: str
    kubernetes_version: str

    def name(self) -> str:
        return "KubernetesVersion"

    def check(self) -> Result:
        try:
            kadm = parse_version(self.kubeadm_version)
        except ValueError as e:
            return [], [f'couldn\'t parse kubeadm version "{self.kubeadm_version}": {e}']
        try:
            k8s = parse_version(self.kubernetes_version)
        except ValueError as e:
            return [], [f'couldn\'t parse Kubernetes version "{self.kubernetes_version}": {e}']
        first_unsupported = (kadm[0], kadm[1] + 1, 0, "0")
        if _version_key(k8s) >= _version_key(first_unsupported):
            shown = f"{k8s[0]}.{k8s[1]}.{k8s[2]}" + (f"-{k8s[3]}" if k8s[3] else "")
            return [
                "Kubernetes version is greater than kubeadm version. Please consider to upgrade kubeadm. "
                f"Kubernetes version: {shown}. Kubeadm version: {kadm[0]}.{kadm[1]}.x"
            ], []
        return OK


@dataclass(frozen=True)
class FirewalldCheck:
    host: Host
    ports: tuple[int, ...]

    def name(self) -> str:
        return "Firewalld"

    def check(self) -> Result:
        if self.host.init_system() is None:
            return [_NO_INIT_SYSTEM], []
        if not self.host.service_exists("firewalld"):
            return OK
        if self.host.service_active("firewalld"):
            ports = " ".join(str(p) for p in self.ports)
            return [
                f"firewalld is active, please ensure ports [{ports}] are open or your cluster may not function correctly"
            ], []
        return OK


@dataclass(frozen=True)
class PortOpenCheck:
    """The port must be free. kubeadm binds all interfaces; we bind `address` (the node's advertise address) so that
    several nodes on one machine (loopback 127.0.10.x) each check their own address."""

    host: Host
    port: int
    address: str = ""
    label: str = ""

    def name(self) -> str:
        return self.label or f"Port-{self.port}"

    def check(self) -> Result:
        return ([], [f"Port {self.port} is in use"]) if self.host.port_in_use(self.address, self.port) else OK


@dataclass(frozen=True)
class FileAvailableCheck:
    """The file must not exist. `path` is the node path (shown, and in the name); `host_path` is where it is here."""

    path: str
    host_path: Path
    label: str = ""

    def name(self) -> str:
        return self.label or f"FileAvailable-{path_label(self.path)}"

    def check(self) -> Result:
        return ([], [f"{self.path} already exists"]) if self.host_path.exists() else OK


@dataclass(frozen=True)
class DirAvailableCheck:
    """The directory must be missing or empty."""

    path: str
    host_path: Path
    label: str = ""

    def name(self) -> str:
        return self.label or f"DirAvailable-{path_label(self.path)}"

    def check(self) -> Result:
        if not self.host_path.is_dir():
            return OK
        try:
            empty = not any(self.host_path.iterdir())
        except OSError as e:
            return [], [f"unable to check if {self.path} is empty: {e.strerror or e}"]
        return OK if empty else ([], [f"{self.path} is not empty"])


@dataclass(frozen=True)
class FileExistingCheck:
    """The file must exist."""

    path: str
    host_path: Path
    label: str = ""

    def name(self) -> str:
        return self.label or f"FileExisting-{path_label(self.path)}"

    def check(self) -> Result:
        return OK if self.host_path.exists() else ([], [f"{self.path} doesn't exist"])


@dataclass(frozen=True)
class FileContentCheck:
    """A kernel setting file (/proc/...) must start with `content`."""

    host: Host
    path: str
    content: str

    def name(self) -> str:
        return f"FileContent-{path_label(self.path)}"

    def check(self) -> Result:
        text = self.host.read_file(self.path, len(self.content))
        if text is None:
            return [], [f"{self.path} does not exist"]
        if text != self.content:
            return [], [f"{self.path} contents are not set to {self.content}"]
        return OK


@dataclass(frozen=True)
class InPathCheck:
    host: Host
    executable: str
    mandatory: bool

    def name(self) -> str:
        return f"FileExisting-{path_label(self.executable)}"

    def check(self) -> Result:
        if self.host.which(self.executable) is not None:
            return OK
        msg = f"{self.executable} not found in system path"
        return ([], [msg]) if self.mandatory else ([msg], [])


@dataclass(frozen=True)
class HTTPProxyCheck:
    host: Host
    address: str
    proto: str = "https"

    def name(self) -> str:
        return "HTTPProxy"

    def check(self) -> Result:
        h = f"[{self.address}]:1234" if ":" in self.address else self.address
        url = f"{self.proto}://{h}"
        proxy = proxy_for(url, self.host.environ())
        if proxy:
            return [
                f'Connection to "{url}" uses proxy "{proxy}". If that is not intended, adjust your proxy settings'
            ], []
        return OK


@dataclass(frozen=True)
class HTTPProxyCIDRCheck:
    host: Host
    cidr: str
    proto: str = "https"

    def name(self) -> str:
        return "HTTPProxyCIDR"

    def check(self) -> Result:
        if not self.cidr:
            return OK
        try:
            net = ipaddress.ip_network(self.cidr, strict=False)
        except ValueError as e:
            return [], [f'error parsing CIDR "{self.cidr}": {e}']
        if net.num_addresses < 2:
            return [], [f"unable to get first IP address from the given CIDR ({net})"]
        ip = net.network_address + 1
        url = f"{self.proto}://[{ip}]:1234/" if ip.version == 6 else f"{self.proto}://{ip}/"
        proxy = proxy_for(url, self.host.environ())
        if proxy:
            return [
                f'connection to "{self.cidr}" uses proxy "{proxy}". This may lead to malfunctional cluster setup. '
                "Make sure that Pod and Services IP ranges specified correctly as exceptions in proxy configuration"
            ], []
        return OK


@dataclass(frozen=True)
class HostnameCheck:
    host: Host
    node_name: str

    def name(self) -> str:
        return "Hostname"

    def check(self) -> Result:
        errors = []
        if not is_dns1123_subdomain(self.node_name):
            errors.append(
                f'invalid node name format "{self.node_name}": a lowercase RFC 1123 subdomain must consist of lower '
                "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
            )
        addrs, err = self.host.lookup_host(self.node_name)
        warnings = []
        if not addrs:
            warnings.append(f'hostname "{self.node_name}" could not be reached')
        if err:
            warnings.append(f'hostname "{self.node_name}": {err}')
        return warnings, errors


@dataclass(frozen=True)
class ServiceCheck:
    host: Host
    service: str
    check_if_active: bool = False
    label: str = ""

    def name(self) -> str:
        return self.label or f"Service-{self.service.capitalize()}"

    def check(self) -> Result:
        if self.host.init_system() is None:
            return [_NO_INIT_SYSTEM], []
        if not self.host.service_exists(self.service):
            return [f"{self.service} service does not exist"], []
        warnings, errors = [], []
        if not self.host.service_enabled(self.service):
            warnings.append(
                f"{self.service} service is not enabled, please run 'systemctl enable {self.service}.service'"
            )
        if self.check_if_active and not self.host.service_active(self.service):
            errors.append(f"{self.service} service is not active, please run 'systemctl start {self.service}.service'")
        return warnings, errors


@dataclass(frozen=True)
class SwapCheck:
    host: Host

    def name(self) -> str:
        return "Swap"

    def check(self) -> Result:
        text = self.host.read_file("/proc/swaps")
        if text is None:
            return OK
        if len(text.splitlines()) > 1:
            return [
                "swap is supported for cgroup v2 only. The kubelet must be properly configured to use swap. Please "
                "refer to https://kubernetes.io/docs/concepts/architecture/nodes/#swap-memory, or disable swap on "
                "the node"
            ], []
        return OK


@dataclass(frozen=True)
class ContainerRuntimeCheck:
    host: Host
    cri_socket: str

    def name(self) -> str:
        return "CRI"

    def check(self) -> Result:
        """Asks the runtime for its Status (RuntimeReady must be true), as kubeadm's IsRunning does."""
        err = self.host.cri_not_running(self.cri_socket)
        return ([], [err]) if err else OK


def kubelet_version_errors(found: str, kubernetes_version: str, minimum: str = c.MINIMUM_KUBELET_VERSION) -> list[str]:
    """kubeadm's KubeletVersion verdict on the kubelet version `found`: below the minimum kubeadm supports, or a newer
    minor than the control plane's (an empty or unparsable `kubernetes_version`, as in join, skips that part). The
    versions are quoted as kubeadm's %q of a parsed version prints them: without the "v"."""
    kubelet = parse_version(found)
    if _version_key(kubelet) < _version_key(parse_version(minimum)):
        return [f'Kubelet version "{found.lstrip("v")}" is lower than kubeadm can support. Please upgrade kubelet']
    try:
        cp = parse_version(kubernetes_version)
    except ValueError:
        return []
    if (kubelet[0], kubelet[1]) > (cp[0], cp[1]):
        return [
            "the kubelet version is higher than the control plane version. This is not a supported version skew "
            f'and may lead to a malfunctional cluster. Kubelet version: "{found.lstrip("v")}" Control plane version: '
            f'"{kubernetes_version.lstrip("v")}"'
        ]
    return []


@dataclass(frozen=True)
class KubeletVersionCheck:
    host: Host
    kubernetes_version: str
    minimum: str = c.MINIMUM_KUBELET_VERSION

    def name(self) -> str:
        return "KubeletVersion"

    def check(self) -> Result:
        code, out = self.host.run(["kubelet", "--version"])
        m = re.search(r"v?\d+\.\d+\.\d+\S*", out)
        if code != 0 or m is None:
            return [], [f"couldn't get kubelet version: cannot execute 'kubelet --version': {out.strip()}"]
        return [], kubelet_version_errors(m.group(0), self.kubernetes_version, self.minimum)


@dataclass(frozen=True)
class InstalledKubeletVersionCheck:
    """KubeletVersion in built-in mode: the version the node's built-in kubelet was installed for (kubelet.package)
    stands for `kubelet --version`. A node with none installed passes: kubelet-start installs the cluster's."""

    layout: Layout
    kubernetes_version: str
    minimum: str = c.MINIMUM_KUBELET_VERSION

    def name(self) -> str:
        return "KubeletVersion"

    def check(self) -> Result:
        from pykubeadm.kubelet.package import installed_version

        found = installed_version(self.layout)
        return ([], kubelet_version_errors(found, self.kubernetes_version, self.minimum)) if found else OK


#: cgroup v2 controllers the kubelet needs.
REQUIRED_CGROUPS_V2 = ("cpu", "cpuset", "memory", "pids")


@dataclass(frozen=True)
class SystemVerificationCheck:
    """The parts of kubeadm's system validators that can be read here: OS, kernel release, cgroups."""

    host: Host

    def name(self) -> str:
        return "SystemVerification"

    def check(self) -> Result:
        warnings: list[str] = []
        errors: list[str] = []
        if self.host.os_name() != "Linux":
            errors.append(f"unsupported operating system: {self.host.os_name()}")
            return warnings, errors
        release = self.host.kernel_release()
        m = re.match(r"^(\d+)\.(\d+)", release)
        if m and (int(m.group(1)), int(m.group(2))) < (4, 19):
            errors.append(
                f"kernel release {release} is unsupported. Recommended LTS version from the 4.x series is 4.19. "
                "Any 5.x or 6.x versions are also supported. For cgroups v2 support, the minimal version is 4.15 "
                "and the recommended version is 5.8+"
            )
        controllers = self.host.read_file("/sys/fs/cgroup/cgroup.controllers")
        if controllers is not None:
            present = set(controllers.split())
            missing = [cg for cg in REQUIRED_CGROUPS_V2 if cg not in present]
            if missing:
                errors.append(f"missing required cgroups: {' '.join(missing)}")
        elif self.host.read_file("/proc/cgroups") is not None:
            warnings.append("cgroups v1 support is in maintenance mode, please migrate to cgroups v2")
        return warnings, errors
