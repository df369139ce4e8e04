"""A container's configuration from the Pod's side, as the kubelet builds it before any runtime runs it: its
environment (`envvars.container_env`: env, envFrom, the downward API, Service links), its volume mounts
(`volumes.PodVolumes.mounts_for`, subPathExpr expanded against that environment) and its command and args with
`$(VAR)` expanded. Anything that cannot be built is a `ContainerConfigError`, the container's
CreateContainerConfigError, with the kubelet's message. Used by the pod workers of both runtimes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pykubeadm.kubelet.volumes import Mount

__all__ = ["ContainerConfigError", "ContainerSetup", "PodSide", "container_setup"]


class ContainerConfigError(Exception):
    """The container's configuration cannot be built (CreateContainerConfigError)."""


class PodSide(Protocol):
    """What a pod worker knows that a container's configuration needs."""

    pod: dict[str, Any]
    node_name: str
    host_ip: str
    pod_ip: str
    pod_ips: list[str]
    objects: Any  # envvars.ObjectCache: the node-wide ConfigMap/Secret cache
    service_env: Callable[[dict[str, Any]], dict[str, str]] | None  # the Pod's Service variables
    volumes: Any  # volumes.PodVolumes, once mounted

    @property
    def client(self) -> Callable[[], Any]: ...

    def event(self, kind: str, reason: str, message: str, field_path: str = "") -> None: ...


@dataclass(frozen=True)
class ContainerSetup:
    """A container's environment, mounts and (expanded) command and args."""

    env: dict[str, str]
    mounts: list[Mount]
    command: list[str]
    args: list[str]


async def container_setup(
    pod: PodSide,
    spec: dict[str, Any],
    *,
    base_env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> ContainerSetup:
    """Resolve env → mounts → command for container `spec` of `pod`. `base_env`: what the container's own env
    overrides (a runtime's defaults); `extra_env`: what overrides it (a runtime's own variables).
    ContainerConfigError when a referenced object, key or field is missing or a volume cannot be mounted."""
    from pykubeadm.kubelet import envvars  # on use: a kubelet of static Pods alone never needs them
    from pykubeadm.kubelet.volumes import VolumeError

    try:
        own = await envvars.container_env(
            pod.pod,
            spec,
            pod.client(),
            node_name=pod.node_name,
            host_ip=pod.host_ip,
            pod_ip=pod.pod_ip,
            pod_ips=pod.pod_ips,
            on_event=lambda reason, message: pod.event("Warning", reason, message),
            objects=pod.objects,
            service_env=pod.service_env(pod.pod) if pod.service_env is not None else None,
        )
    except envvars.EnvError as e:
        raise ContainerConfigError(str(e)) from e
    env = {**(base_env or {}), **own, **(extra_env or {})}
    try:
        mounts = pod.volumes.mounts_for(spec, env) if pod.volumes is not None else []
    except VolumeError as e:
        raise ContainerConfigError(e.message) from e
    command, args = envvars.expand_command(spec, env)
    return ContainerSetup(env, mounts, command, args)
