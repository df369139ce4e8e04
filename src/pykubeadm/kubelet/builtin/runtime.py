"""The built-in "container runtime": image → program, container paths → host paths, process start and stop.

A static Pod's container becomes a local process. The image's name selects the program (`kube-apiserver`,
`kube-controller-manager`, `kube-scheduler`, kubeadm's addons `kube-proxy` and `coredns`, the lab's addons
`kindnetd`, `local-path-provisioner` and `metrics-server` →
`<python> -m pykubeadm component <name>`; `etcd` → the etcd binary),
its tag is the version the component reports (env PYKUBEADM_COMPONENT_VERSION). The manifest's command/args are the
flags. Every container path under a hostPath volume mount is rewritten to `<root>/<hostPath>/<rest>`, the way a
runtime bind-mounts it. Processes run in their own session (process group) and are stopped by signalling that group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pykubeadm import constants as c
from pykubeadm.kubelet.imageref import parse_image
from pykubeadm.layout import Layout

__all__ = [
    "BUILTIN_COMPONENTS",
    "COMPONENT_VERSION_ENV",
    "RUNTIME_TYPE",
    "ImageError",
    "PathMapper",
    "Program",
    "resolve_program",
    "start_process",
    "stop_process",
]

#: The built-in runtime's type: its containers are `pykubeadm://<id>` in Pod status.
RUNTIME_TYPE = "pykubeadm"

#: The environment variable carrying the image tag to built-in components (the version they report).
COMPONENT_VERSION_ENV = "PYKUBEADM_COMPONENT_VERSION"

#: Images run as `pykubeadm component <name>`.
_PYTHON_COMPONENTS = (
    c.KUBE_APISERVER,
    c.KUBE_CONTROLLER_MANAGER,
    c.KUBE_SCHEDULER,
    c.KUBE_PROXY,
    c.COREDNS,
    c.KINDNETD,
    c.LOCAL_PATH_PROVISIONER,
    c.METRICS_SERVER,
)
#: Every image only the built-in runtime can run (by the image's last name): its Python components and etcd.
BUILTIN_COMPONENTS: frozenset[str] = frozenset((*_PYTHON_COMPONENTS, c.ETCD))


class ImageError(Exception):
    """The image cannot be run here; `reason` is the container's waiting reason (ErrImagePull-like)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class Program:
    """What to exec for an image: argv prefix (the entrypoint), the component name and the version (image tag)."""

    entrypoint: tuple[str, ...]
    component: str
    version: str


def resolve_program(image: str, *, etcd_binary: str | None = None) -> Program:
    """The program for `image`; ImageError with an ErrImagePull-like reason when this node cannot run it."""
    if not image:
        raise ImageError("InvalidImageName", "container has no image")
    _, name, tag = parse_image(image)
    if name in _PYTHON_COMPONENTS:
        return Program((sys.executable, "-m", "pykubeadm", "component", name), name, tag)
    if name == c.ETCD:
        binary = (
            etcd_binary or shutil.which("etcd") or ("/usr/bin/etcd" if os.access("/usr/bin/etcd", os.X_OK) else None)
        )
        if not binary:
            raise ImageError("ErrImagePull", f'image "{image}": no etcd binary found on PATH or at /usr/bin/etcd')
        return Program((binary,), name, tag)
    raise ImageError(
        "ErrImagePull",
        f'failed to pull image "{image}": the built-in runtime runs only kube-apiserver, kube-controller-manager, '
        "kube-scheduler, kube-proxy, coredns, kindnetd, local-path-provisioner, metrics-server and etcd images",
    )


def build_argv(program: Program, command: Sequence[str], args: Sequence[str]) -> list[str]:
    """Entrypoint + flags: a manifest `command` whose first word names the binary replaces the image's entrypoint."""
    flags = list(command)
    if flags and not flags[0].startswith("-"):
        flags = flags[1:]  # `kube-apiserver`, `etcd`, or a path to it: the entrypoint stands in for it
    return [*program.entrypoint, *flags, *args]


# --- path mapping -----------------------------------------------------------------------------------------------

_SCHEME_PATH = re.compile(r"^(sqlite|file|unix)://(/.*)$")


@dataclass(frozen=True)
class PathMapper:
    """Maps container paths to host paths through a container's volumeMounts and the Pod's hostPath volumes."""

    mounts: tuple[tuple[str, str], ...]  # (mountPath, hostPath/subPath as a node path), longest mountPath first
    layout: Layout

    @classmethod
    def for_container(cls, pod_spec: Mapping[str, Any], container: Mapping[str, Any], layout: Layout) -> PathMapper:
        volumes = {v.get("name"): v for v in pod_spec.get("volumes") or []}
        mounts: list[tuple[str, str]] = []
        for m in container.get("volumeMounts") or []:
            vol = volumes.get(m.get("name"))
            if not vol or "hostPath" not in vol or not m.get("mountPath"):
                continue
            host = str(PurePosixPath(vol["hostPath"]["path"]) / (m.get("subPath") or ""))
            mounts.append((str(PurePosixPath(m["mountPath"])), host.rstrip("/") or "/"))
        mounts.sort(key=lambda t: len(t[0]), reverse=True)
        return cls(tuple(mounts), layout)

    def map_path(self, path: str) -> str | None:
        """The host path for a container path under a mount, else None."""
        for mount, host in self.mounts:
            if path == mount or path.startswith(mount.rstrip("/") + "/"):
                rest = path[len(mount) :].lstrip("/")
                node_path = str(PurePosixPath(host) / rest) if rest else host
                return str(self.layout.host(node_path))
        return None

    def map_value(self, value: str) -> str:
        """Map every comma-separated element that is (or embeds after `sqlite://` etc.) a mounted container path."""
        out = []
        for part in value.split(","):
            m = _SCHEME_PATH.match(part)
            if m:
                mapped = self.map_path(m.group(2))
                out.append(f"{m.group(1)}://{mapped}" if mapped else part)
            elif part.startswith("/"):
                out.append(self.map_path(part) or part)
            else:
                out.append(part)
        return ",".join(out)

    def map_arg(self, arg: str) -> str:
        """`--flag=/container/path` → `--flag=/root/host/path`; a bare path argument is mapped too."""
        if arg.startswith("-") and "=" in arg:
            name, value = arg.split("=", 1)
            return f"{name}={self.map_value(value)}"
        return self.map_value(arg)


def container_env(
    container: Mapping[str, Any], mapper: PathMapper, program: Program, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The process environment: ours minus root-dir settings, the container's `env` values (mapped), the version."""
    env = {k: v for k, v in (base if base is not None else os.environ).items() if k != c.ROOT_DIR_ENV}
    for item in container.get("env") or []:
        if "value" in item:
            env[item["name"]] = mapper.map_value(str(item["value"]))
    if program.version:
        env[COMPONENT_VERSION_ENV] = program.version
    return env


async def start_process(
    argv: Sequence[str],
    env: Mapping[str, str],
    log_path: Path,
    cwd: Path | None = None,
    preexec: Callable[[], None] | None = None,
    cri: bool = False,
) -> Any:
    """Start `argv` in a new session with stdout and stderr appended to `log_path` (raw, or with `cri` as CRI log
    lines written by the kubelet as they come); returns the asyncio Process."""
    log_path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    with open(log_path, "ab") as log:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE if cri else log,
            stderr=asyncio.subprocess.PIPE if cri else log,
            env=dict(env),
            cwd=str(cwd) if cwd else None,
            start_new_session=True,
            preexec_fn=preexec,
        )
    if cri:
        assert proc.stdout is not None and proc.stderr is not None  # both PIPE
        _keep_writing(_write_cri_log(proc.stdout, proc.stderr, log_path))
    return proc


_LOG_WRITERS: set[asyncio.Task[None]] = set()


def _keep_writing(writer: Coroutine[Any, Any, None]) -> None:
    """Run a log writer until its pipes close, holding a reference to its task meanwhile."""
    task = asyncio.ensure_future(writer)
    _LOG_WRITERS.add(task)
    task.add_done_callback(_LOG_WRITERS.discard)


def write_cri_log_from_fds(out_fd: int, err_fd: int, log_path: Path) -> None:
    """Copy what a process writes to two pipes (their read ends, owned from now on) into `log_path` as CRI lines."""
    _keep_writing(_write_cri_log_fds(out_fd, err_fd, log_path))


async def _write_cri_log_fds(out_fd: int, err_fd: int, log_path: Path) -> None:
    loop = asyncio.get_running_loop()
    readers: list[asyncio.StreamReader] = []
    transports: list[asyncio.BaseTransport] = []
    try:
        for fd in (out_fd, err_fd):
            reader = asyncio.StreamReader()
            pipe = os.fdopen(fd, "rb", 0)
            transport, _ = await loop.connect_read_pipe(lambda r=reader: asyncio.StreamReaderProtocol(r), pipe)  # type: ignore[misc]
            readers.append(reader)
            transports.append(transport)
        await _write_cri_log(readers[0], readers[1], log_path)
    finally:
        for t in transports:
            t.close()


async def _write_cri_log(stdout: asyncio.StreamReader, stderr: asyncio.StreamReader, log_path: Path) -> None:
    """Copy a process's stdout and stderr into `log_path` as CRI lines until both pipes close."""
    from pykubeadm.kubelet.crilog import CriLogWriter

    writer = CriLogWriter()
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640)

    async def pump(stream: asyncio.StreamReader, name: str) -> None:
        while chunk := await stream.read(64 * 1024):
            data = writer.write(name, chunk)
            if data:
                os.write(fd, data)

    try:
        await asyncio.gather(pump(stdout, "stdout"), pump(stderr, "stderr"))
        rest = writer.flush()
        if rest:
            os.write(fd, rest)
    except OSError:
        pass
    finally:
        os.close(fd)


def signal_group(pid: int, sig: int) -> None:
    """Send `sig` to the process group `pid` (a container's session), if it is still there."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def stop_process(proc: Any, grace: float) -> int | None:
    """SIGTERM the process group, wait up to `grace` seconds, then SIGKILL it; returns the exit code."""
    if proc.returncode is None:
        signal_group(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            signal_group(proc.pid, signal.SIGKILL)
            await proc.wait()
    # the leader is gone; make sure nothing else of its group survives
    signal_group(proc.pid, signal.SIGKILL)
    return proc.returncode


def kill_group_now(pid: int) -> None:
    """SIGKILL a process group (used at kubelet exit when there is no loop left to wait in)."""
    signal_group(pid, signal.SIGKILL)
