"""The common shape of kubeadm's static Pods (kubeadm's util/staticpod): skeleton, probes, hostPath volumes, env vars.

Everything is plain dicts in the JSON shape of a corev1.Pod, so the result can be patched (`util/patches.py`) and
marshalled (`manifests.staticpod`) like kubeadm does through JSON. Called by `manifests.controlplane` and
`manifests.etcd`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pykubeadm import constants as c

__all__ = [
    "CONTROL_PLANE_TIER",
    "HOST_PATH_DIRECTORY_OR_CREATE",
    "HOST_PATH_FILE_OR_CREATE",
    "SYSTEM_NODE_CRITICAL_PRIORITY",
    "EnvSpec",
    "Mount",
    "component_pod",
    "liveness_probe",
    "merge_env",
    "probe_address",
    "proxy_env",
    "readiness_probe",
    "resources",
    "startup_probe",
]

CONTROL_PLANE_TIER = "control-plane"
#: Priority of the system-node-critical PriorityClass.
SYSTEM_NODE_CRITICAL_PRIORITY = 2000001000
HOST_PATH_DIRECTORY_OR_CREATE = "DirectoryOrCreate"
HOST_PATH_FILE_OR_CREATE = "FileOrCreate"


@dataclass(frozen=True)
class Mount:
    """One hostPath volume and its mount in the component's container (`path_type=None` writes no `type`)."""

    name: str
    host_path: str
    mount_path: str
    read_only: bool
    path_type: str | None = HOST_PATH_DIRECTORY_OR_CREATE

    def volume(self) -> dict[str, Any]:
        host_path: dict[str, Any] = {"path": self.host_path}
        if self.path_type is not None:
            host_path["type"] = self.path_type
        return {"hostPath": host_path, "name": self.name}

    def volume_mount(self) -> dict[str, Any]:
        m: dict[str, Any] = {"mountPath": self.mount_path, "name": self.name}
        if self.read_only:
            m["readOnly"] = True
        return m


@dataclass(frozen=True)
class EnvSpec:
    """A container env var: a plain value or a `valueFrom` source (JSON shape)."""

    name: str
    value: str = ""
    value_from: Mapping[str, Any] | None = None

    def to_obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.value:
            out["value"] = self.value
        if self.value_from:
            out["valueFrom"] = dict(self.value_from)
        return out


def proxy_env(environ: Mapping[str, str] | None = None) -> list[EnvSpec]:
    """kubeadm's GetProxyEnvVars: every variable whose name ends in `_proxy` (any case) with a non-empty value."""
    env = os.environ if environ is None else environ
    return [EnvSpec(k, v) for k, v in env.items() if k.lower().endswith("_proxy") and v]


def merge_env(*lists: Iterable[EnvSpec]) -> list[dict[str, Any]]:
    """kubeadm's MergeKubeadmEnvVars: later lists override same-named vars of earlier ones; sorted by name."""
    merged: dict[str, EnvSpec] = {}
    for envs in lists:
        for e in envs:
            merged[e.name] = e
    return [merged[k].to_obj() for k in sorted(merged)]


def probe_address(address: str | None, default: str = "127.0.0.1") -> str:
    """Probe host for a bind/advertise address: unspecified addresses probe the Pod IP (empty host)."""
    if not address:
        return default
    if address in ("0.0.0.0", "::"):
        return ""
    return address


def _http_get(host: str, path: str, port: int, scheme: str) -> dict[str, Any]:
    get: dict[str, Any] = {"path": path, "port": port, "scheme": scheme}
    if host:
        get["host"] = host
    return get


def liveness_probe(host: str, path: str, port: int, scheme: str) -> dict[str, Any]:
    """initialDelaySeconds 10, timeoutSeconds 15, failureThreshold 8, periodSeconds 10."""
    return {
        "failureThreshold": 8,
        "httpGet": _http_get(host, path, port, scheme),
        "initialDelaySeconds": 10,
        "periodSeconds": 10,
        "timeoutSeconds": 15,
    }


def readiness_probe(host: str, path: str, port: int, scheme: str) -> dict[str, Any]:
    """timeoutSeconds 15, failureThreshold 3, periodSeconds 1, no initial delay."""
    return {
        "failureThreshold": 3,
        "httpGet": _http_get(host, path, port, scheme),
        "periodSeconds": 1,
        "timeoutSeconds": 15,
    }


def startup_probe(host: str, path: str, port: int, scheme: str, timeout: timedelta) -> dict[str, Any]:
    """initialDelaySeconds 10, timeoutSeconds 15, periodSeconds 10, failureThreshold = ceil(timeout / 10s)."""
    period = 10
    return {
        "failureThreshold": max(1, math.ceil(timeout.total_seconds() / period)),
        "httpGet": _http_get(host, path, port, scheme),
        "initialDelaySeconds": 10,
        "periodSeconds": period,
        "timeoutSeconds": 15,
    }


def resources(cpu: str, memory: str | None = None) -> dict[str, Any]:
    requests = {"cpu": cpu}
    if memory:
        requests["memory"] = memory
    return {"requests": requests}


def component_pod(
    container: dict[str, Any], mounts: Iterable[Mount], annotations: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """kubeadm's ComponentPod: the static Pod around one container, volumes sorted by name; the container's mounts
    sorted by name too unless it lists its own (kubeadm's etcd Pod mounts etcd-data before etcd-certs)."""
    by_name = {m.name: m for m in mounts}
    names = sorted(by_name)
    container = dict(container)
    if names and "volumeMounts" not in container:
        container["volumeMounts"] = [by_name[n].volume_mount() for n in names]
    if not container.get("env"):
        container.pop("env", None)
    metadata: dict[str, Any] = {
        "creationTimestamp": None,
        "labels": {"component": container["name"], "tier": CONTROL_PLANE_TIER},
        "name": container["name"],
        "namespace": c.NAMESPACE_SYSTEM,
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    spec: dict[str, Any] = {
        "containers": [container],
        "hostNetwork": True,
        "priority": SYSTEM_NODE_CRITICAL_PRIORITY,
        "priorityClassName": "system-node-critical",
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
    }
    if names:
        spec["volumes"] = [by_name[n].volume() for n in names]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {}}
