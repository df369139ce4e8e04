"""The host facts preflight reads, behind one small adapter: `RealHost` asks this machine, `FakeHost` (tests) answers
from fields. Checks never touch /proc, sockets, DNS, PATH or systemd directly (STYLE rule 12).

Files under the node's root dir (manifests, etcd data dir, certificates) are ordinary paths and are read directly.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from pykubeadm.errors import KubeadmError

__all__ = ["FakeHost", "Host", "RealHost"]


class Host(Protocol):
    def euid(self) -> int: ...
    def cpu_count(self) -> int: ...
    def mem_total_mb(self) -> int: ...
    def port_in_use(self, host: str, port: int) -> bool: ...
    def read_file(self, path: str, limit: int = -1) -> str | None: ...
    def which(self, executable: str) -> str | None: ...
    def lookup_host(self, name: str) -> tuple[list[str], str | None]: ...
    def environ(self) -> Mapping[str, str]: ...
    def init_system(self) -> str | None: ...
    def service_exists(self, name: str) -> bool: ...
    def service_enabled(self, name: str) -> bool: ...
    def service_active(self, name: str) -> bool: ...
    def kernel_release(self) -> str: ...
    def os_name(self) -> str: ...
    def run(self, argv: list[str]) -> tuple[int, str]: ...
    def cri_not_running(self, endpoint: str) -> str | None: ...
    def cri_image_exists(self, endpoint: str, image: str) -> bool: ...
    def cri_pull_image(self, endpoint: str, image: str) -> str | None: ...
    def cri_sandbox_image(self, endpoint: str) -> tuple[str, str | None]: ...


class RealHost:
    """This machine."""

    def euid(self) -> int:
        return os.geteuid()

    def cpu_count(self) -> int:
        try:
            return len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            return os.cpu_count() or 1

    def mem_total_mb(self) -> int:
        text = self.read_file("/proc/meminfo") or ""
        for line in text.splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
        return 0

    def port_in_use(self, host: str, port: int) -> bool:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        s = socket.socket(family, socket.SOCK_STREAM)
        try:
            # Like Go's net.Listen: SO_REUSEADDR, so TIME_WAIT leftovers do not count as "in use".
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
            s.listen(1)
        except OSError:
            return True
        finally:
            s.close()
        return False

    def read_file(self, path: str, limit: int = -1) -> str | None:
        try:
            with open(path, "rb") as f:
                return f.read(limit).decode(errors="replace")
        except OSError:
            return None

    def which(self, executable: str) -> str | None:
        return shutil.which(executable)

    def lookup_host(self, name: str) -> tuple[list[str], str | None]:
        try:
            infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError) as e:
            return [], f"lookup {name}: {getattr(e, 'strerror', None) or e}"
        return sorted({str(i[4][0]) for i in infos}), None  # the address of an AF_INET(6) sockaddr

    def environ(self) -> Mapping[str, str]:
        return os.environ

    def init_system(self) -> str | None:
        if shutil.which("systemctl") and os.path.isdir("/run/systemd/system"):
            return "systemd"
        return None

    def _systemctl(self, *args: str) -> tuple[int, str]:
        return self.run(["systemctl", *args])

    def service_exists(self, name: str) -> bool:
        _, out = self._systemctl("status", name)
        return "Loaded: not-found" not in out and "could not be found" not in out

    def service_enabled(self, name: str) -> bool:
        return self._systemctl("is-enabled", name)[0] == 0

    def service_active(self, name: str) -> bool:
        return self._systemctl("is-active", name)[0] == 0

    def kernel_release(self) -> str:
        return platform.release()

    def os_name(self) -> str:
        return platform.system()

    def run(self, argv: list[str]) -> tuple[int, str]:
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return 127, str(e)
        return r.returncode, r.stdout + r.stderr

    # The runtime is asked through CRI (kubeadm's util/runtime); imported here so preflight without CRI loads no gRPC.
    def cri_not_running(self, endpoint: str) -> str | None:
        from pykubeadm.cri.kubeadmruntime import ContainerRuntime

        try:
            ContainerRuntime(endpoint).is_running()
        except KubeadmError as err:
            return str(err)
        return None

    def cri_image_exists(self, endpoint: str, image: str) -> bool:
        from pykubeadm.cri.kubeadmruntime import ContainerRuntime

        try:
            return ContainerRuntime(endpoint).image_exists(image)
        except KubeadmError:
            return False

    def cri_pull_image(self, endpoint: str, image: str) -> str | None:
        from pykubeadm.cri.kubeadmruntime import ContainerRuntime

        try:
            ContainerRuntime(endpoint).pull_image(image)
        except KubeadmError as err:
            return str(err)
        return None

    def cri_sandbox_image(self, endpoint: str) -> tuple[str, str | None]:
        """(the runtime's sandbox image, "") or ("", why it could not be read)."""
        from pykubeadm.cri.kubeadmruntime import ContainerRuntime

        try:
            return ContainerRuntime(endpoint).sandbox_image(), None
        except KubeadmError as err:
            return "", str(err)


@dataclass
class FakeHost:
    """A host described by fields (defaults: a healthy 2-CPU node, nothing listening, every command present)."""

    uid: int = 0
    cpus: int = 2
    mem_mb: int = 4096
    busy_ports: set[tuple[str, int]] = field(default_factory=set)
    files: dict[str, str] = field(default_factory=dict)
    executables: set[str] | None = None
    hosts: dict[str, list[str]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    init: str | None = None
    services: dict[str, tuple[bool, bool]] = field(default_factory=dict)  # name → (enabled, active)
    kernel: str = "6.1.0"
    os: str = "Linux"
    commands: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: CRI endpoints that answer with RuntimeReady; any other is not running.
    cri_endpoints: set[str] = field(default_factory=set)
    #: Images present in the runtime; and pull failures by image (every other pull succeeds and is recorded).
    cri_images: set[str] = field(default_factory=set)
    cri_pull_errors: dict[str, str] = field(default_factory=dict)
    pulled: list[str] = field(default_factory=list)
    #: The runtime's sandbox image ("" when it cannot be read).
    sandbox_image: str = ""
    #: argv of every `run` call, in order.
    calls: list[list[str]] = field(default_factory=list)

    def euid(self) -> int:
        return self.uid

    def cpu_count(self) -> int:
        return self.cpus

    def mem_total_mb(self) -> int:
        return self.mem_mb

    def port_in_use(self, host: str, port: int) -> bool:
        return (host, port) in self.busy_ports or ("", port) in self.busy_ports

    def read_file(self, path: str, limit: int = -1) -> str | None:
        text = self.files.get(path)
        return text if text is None or limit < 0 else text[:limit]

    def which(self, executable: str) -> str | None:
        if self.executables is None or executable in self.executables:
            return f"/usr/bin/{executable}"
        return None

    def lookup_host(self, name: str) -> tuple[list[str], str | None]:
        if name in self.hosts:
            return self.hosts[name], None
        return [], f"lookup {name}: no such host"

    def environ(self) -> Mapping[str, str]:
        return self.env

    def init_system(self) -> str | None:
        return self.init

    def service_exists(self, name: str) -> bool:
        return name in self.services

    def service_enabled(self, name: str) -> bool:
        return self.services.get(name, (False, False))[0]

    def service_active(self, name: str) -> bool:
        return self.services.get(name, (False, False))[1]

    def kernel_release(self) -> str:
        return self.kernel

    def os_name(self) -> str:
        return self.os

    def run(self, argv: list[str]) -> tuple[int, str]:
        self.calls.append(list(argv))
        return self.commands.get(argv[0], (127, f'exec: "{argv[0]}": executable file not found in $PATH'))

    def cri_not_running(self, endpoint: str) -> str | None:
        if endpoint in self.cri_endpoints:
            return None
        path = endpoint.removeprefix("unix://")
        return (
            "container runtime is not running: rpc error: code = Unavailable desc = failed to connect to all "
            f"addresses; last error: FAILED_PRECONDITION: unix:{path}: connect failed: addr: unix:{path} error: No "
            "such file or directory"
        )

    def cri_image_exists(self, endpoint: str, image: str) -> bool:
        return image in self.cri_images

    def cri_sandbox_image(self, endpoint: str) -> tuple[str, str | None]:
        return (self.sandbox_image, None) if self.sandbox_image else ("", "no 'sandboxImage' field in CRI info config")

    def cri_pull_image(self, endpoint: str, image: str) -> str | None:
        if image in self.cri_pull_errors:
            return self.cri_pull_errors[image]
        self.pulled.append(image)
        self.cri_images.add(image)
        return None
