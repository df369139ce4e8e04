"""The lab's local registry (`lab up --registry`) and its registry mirrors (`--registry-mirror REGISTRY=URL`).

kind's local registry recipe without Docker: Debian's `docker-registry` (distribution v2) runs in the lab's own
network namespace, on the bridge's address (172.18.0.1:5000), so every node reaches it on the lab network; the lab's
relay publishes it on the host's 127.0.0.1:5001 (lab.relay), where `skopeo copy ... docker://localhost:5001/NAME`
(or any client) pushes. Every node's containerd pulls `localhost:5001/...` from it through a `hosts.toml` under its
certs.d (`server` and a `[host."http://172.18.0.1:5000"]` with pull and resolve), and the cluster documents it in
kind's `local-registry-hosting` ConfigMap in kube-public (KEP-1755). Its storage is in the lab's state dir; `stop`
ends it by its pid (checked against its command line), never by name.

A mirror, `--registry-mirror docker.io=http://mirror.example:5000`, becomes that registry's hosts.toml on every node:
the mirror asked first, the registry's own server after it.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from pykubeadm.errors import KubeadmError
from pykubeadm.lab import network
from pykubeadm.lab.pidfile import recorded_pid, stop_recorded, write_pid

__all__ = [
    "HOST_PORT",
    "LAB_PORT",
    "REGISTRY_HOST",
    "hosts",
    "lab_address",
    "local_registry_hosting",
    "parse_mirrors",
    "running",
    "start",
    "stop",
    "unavailable_reason",
    "wait",
]

#: Where the host pushes to (and what image names say): kind's local registry address.
HOST_PORT = 5001
REGISTRY_HOST = f"localhost:{HOST_PORT}"
#: The registry's port on the lab network.
LAB_PORT = 5000
_PID_FILE = "registry.pid"
_DIR = "registry"
#: Docker Hub's registry host, whose API server is not its name (containerd's default for docker.io).
_DOCKER_HUB = ("docker.io", "https://registry-1.docker.io")
#: KEP-1755's ConfigMap.
CONFIGMAP_NAME = "local-registry-hosting"
CONFIGMAP_NAMESPACE = "kube-public"
_HELP = "https://kind.sigs.k8s.io/docs/user/local-registry/"


def lab_address() -> str:
    """HOST:PORT of the registry on the lab network (the bridge's address)."""
    return f"{network.GATEWAY}:{LAB_PORT}"


def unavailable_reason() -> str | None:
    import shutil

    if shutil.which("docker-registry") is None:
        return 'the "docker-registry" command is missing (Debian package "docker-registry")'
    return None


def _config(state: Path) -> Path:
    return state / _DIR / "config.yml"


def running(state: Path) -> int | None:
    """The pid of this lab's registry, if it runs."""
    return recorded_pid(state / _PID_FILE, str(_config(state)))


def start(state: Path) -> int:
    """Start docker-registry in the lab's network namespace on lab_address(); its pid (not waited for: see wait)."""
    import subprocess

    from pykubeadm.util.namespaces import nsenter_prefix

    why = unavailable_reason()
    if why is not None:
        raise KubeadmError(f"lab: --registry cannot run: {why}")
    root = state / _DIR
    root.mkdir(parents=True, exist_ok=True)
    config = {
        "version": 0.1,
        "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(root / "data")}, "delete": {"enabled": True}},
        "http": {"addr": lab_address()},
    }
    _config(state).write_text(yaml.safe_dump(config, sort_keys=False))
    with open(root / "registry.log", "ab") as log:
        proc = subprocess.Popen(
            [*nsenter_prefix(network.network_namespace(state)), "docker-registry", "serve", str(_config(state))],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    write_pid(state / _PID_FILE, proc.pid)
    return proc.pid


def wait(state: Path, timeout: float = 30.0) -> None:
    """Block until the registry answers `GET /v2/` through the relay on the host's 127.0.0.1:5001."""
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
    deadline = time.monotonic() + timeout
    while True:
        try:
            with direct.open(f"http://127.0.0.1:{HOST_PORT}/v2/", timeout=1) as resp:
                if resp.status == 200:
                    return
        except (OSError, urllib.error.URLError):
            pass
        if running(state) is None or time.monotonic() > deadline:
            log = (state / _DIR / "registry.log").read_text(errors="replace")[-1500:] if (state / _DIR).exists() else ""
            raise KubeadmError(f"lab: the registry does not answer on 127.0.0.1:{HOST_PORT}: {log}")
        time.sleep(0.02)


def stop(state: Path) -> bool:
    """Stop this lab's registry by its pid; True if one ran."""
    return stop_recorded(state / _PID_FILE, str(_config(state)))


def parse_mirrors(flags: Iterable[str]) -> dict[str, list[str]]:
    """`--registry-mirror REGISTRY=URL` values → registry → its mirrors' URLs, in the order given."""
    out: dict[str, list[str]] = {}
    for flag in flags:
        registry, sep, url = flag.partition("=")
        registry, url = registry.strip(), url.strip()
        if not sep or not registry or "/" in registry or not url.startswith(("http://", "https://")):
            raise KubeadmError(
                f'invalid --registry-mirror "{flag}": use REGISTRY=URL with an http:// or https:// URL, e.g. '
                "--registry-mirror docker.io=http://mirror.example:5000"
            )
        out.setdefault(registry, []).append(url.rstrip("/"))
    return out


def _server_of(registry: str) -> str:
    return _DOCKER_HUB[1] if registry == _DOCKER_HUB[0] else f"https://{registry}"


def hosts(with_registry: bool, mirrors: Iterable[str]) -> dict[str, tuple[str, list[str]]]:
    """The registry hosts every node's containerd gets: registry → (its server, the hosts asked first)."""
    out = {registry: (_server_of(registry), urls) for registry, urls in parse_mirrors(mirrors).items()}
    if with_registry:
        out[REGISTRY_HOST] = (f"http://{lab_address()}", [])
    return out


def local_registry_hosting() -> dict[str, Any]:
    """kind's `local-registry-hosting` ConfigMap (KEP-1755's LocalRegistryHostingV1): where to push from the host,
    where Pods' images are pulled from."""
    value = {
        "host": REGISTRY_HOST,
        "hostFromContainerRuntime": REGISTRY_HOST,
        "hostFromClusterNetwork": lab_address(),
        "help": _HELP,
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP_NAME, "namespace": CONFIGMAP_NAMESPACE},
        "data": {"localRegistryHosting.v1": yaml.safe_dump(value, sort_keys=False)},
    }
