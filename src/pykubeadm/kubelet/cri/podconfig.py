"""A Pod and its containers as CRI configs, as the real kubelet builds them (kuberuntime's sandbox and container
config): the sandbox's metadata, kube's labels and annotations, hostname, DNS (`dnsconfig.pod_dns`), port mappings,
log directory, Linux namespaces and security context; a container's command/args (empty: the image's
ENTRYPOINT/CMD, which is containerd's default), env, mounts, log path `<name>/<restartCount>.log`, resources as
LinuxContainerResources and its security context. Used by `kubelet.cri.podworker`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pykubeadm.cri.v1 import api_pb2 as api
from pykubeadm.kubelet import dnsconfig
from pykubeadm.kubelet.resources import CFS_PERIOD_US, container_resources, milli_cpu_to_quota, milli_cpu_to_shares
from pykubeadm.kubelet.securitycontext import effective_context

__all__ = [
    "CONTAINER_NAME_LABEL",
    "POD_NAMESPACE_LABEL",
    "POD_NAME_LABEL",
    "POD_UID_LABEL",
    "RESTART_COUNT_ANNOTATION",
    "container_config",
    "sandbox_config",
]

#: kube's labels on sandboxes and containers (pkg/kubelet/types/labels.go) and the container annotations it reads back.
POD_NAME_LABEL = "io.kubernetes.pod.name"
POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
POD_UID_LABEL = "io.kubernetes.pod.uid"
CONTAINER_NAME_LABEL = "io.kubernetes.container.name"
RESTART_COUNT_ANNOTATION = "io.kubernetes.container.restartCount"
TERMINATION_MESSAGE_PATH_ANNOTATION = "io.kubernetes.container.terminationMessagePath"
HASH_ANNOTATION = "io.kubernetes.container.hash"
_PROTOCOLS = {"TCP": api.Protocol.TCP, "UDP": api.Protocol.UDP, "SCTP": api.Protocol.SCTP}


def _pod_labels(pod: Mapping[str, Any], uid: str) -> dict[str, str]:
    meta = pod.get("metadata") or {}
    return {
        POD_NAME_LABEL: str(meta.get("name", "")),
        POD_NAMESPACE_LABEL: str(meta.get("namespace") or "default"),
        POD_UID_LABEL: uid,
    }


def _port_mappings(spec: Mapping[str, Any]) -> list[api.PortMapping]:
    out = []
    for ct in spec.get("containers") or []:
        for p in ct.get("ports") or []:
            if not p.get("containerPort"):
                continue
            out.append(
                api.PortMapping(
                    protocol=_PROTOCOLS.get(str(p.get("protocol") or "TCP"), api.Protocol.TCP),
                    container_port=int(p["containerPort"]),
                    host_port=int(p.get("hostPort") or 0),
                    host_ip=str(p.get("hostIP") or ""),
                )
            )
    return out


def _namespaces(spec: Mapping[str, Any]) -> api.NamespaceOption:
    return api.NamespaceOption(
        network=api.NamespaceMode.NODE if spec.get("hostNetwork") else api.NamespaceMode.POD,
        pid=api.NamespaceMode.NODE
        if spec.get("hostPID")
        else api.NamespaceMode.POD
        if spec.get("shareProcessNamespace")
        else api.NamespaceMode.CONTAINER,
        ipc=api.NamespaceMode.NODE if spec.get("hostIPC") else api.NamespaceMode.POD,
    )


def _seccomp(sc: Mapping[str, Any]) -> api.SecurityProfile | None:
    profile = sc.get("seccompProfile") or {}
    kind = profile.get("type")
    if kind == "RuntimeDefault":
        return api.SecurityProfile(profile_type=api.SecurityProfile.ProfileType.RuntimeDefault)
    if kind == "Localhost":
        return api.SecurityProfile(
            profile_type=api.SecurityProfile.ProfileType.Localhost, localhost_ref=str(profile.get("localhostProfile"))
        )
    return None


def sandbox_config(
    pod: Mapping[str, Any],
    uid: str,
    *,
    log_dir: Path,
    cluster_dns: Sequence[str],
    cluster_domain: str,
    host_dns: dnsconfig.DnsConfig,
    attempt: int = 0,
) -> tuple[api.PodSandboxConfig, str]:
    """(the Pod's PodSandboxConfig, a DNS warning or "")."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    dns, warning = dnsconfig.pod_dns(pod, cluster_dns, cluster_domain, host_dns)
    hostname, _ = dnsconfig.pod_hostname(pod, cluster_domain)
    pod_sc = spec.get("securityContext") or {}
    privileged = any(
        (ct.get("securityContext") or {}).get("privileged")
        for ct in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    )
    sc = api.LinuxSandboxSecurityContext(
        namespace_options=_namespaces(spec),
        privileged=bool(privileged),
        supplemental_groups=[int(g) for g in pod_sc.get("supplementalGroups") or []],
    )
    if pod_sc.get("runAsUser") is not None:
        sc.run_as_user.value = int(pod_sc["runAsUser"])
    if pod_sc.get("runAsGroup") is not None:
        sc.run_as_group.value = int(pod_sc["runAsGroup"])
    if pod_sc.get("fsGroup") is not None:
        sc.supplemental_groups.append(int(pod_sc["fsGroup"]))
    seccomp = _seccomp(pod_sc)
    if seccomp is not None:
        sc.seccomp.CopyFrom(seccomp)
    config = api.PodSandboxConfig(
        metadata=api.PodSandboxMetadata(
            name=str(meta.get("name", "")), namespace=str(meta.get("namespace") or "default"), uid=uid, attempt=attempt
        ),
        hostname="" if spec.get("hostNetwork") else hostname,
        log_directory=str(log_dir),
        dns_config=api.DNSConfig(servers=dns.nameservers, searches=dns.searches, options=dns.options),
        port_mappings=_port_mappings(spec),
        labels={**{str(k): str(v) for k, v in (meta.get("labels") or {}).items()}, **_pod_labels(pod, uid)},
        annotations={str(k): str(v) for k, v in (meta.get("annotations") or {}).items()},
        linux=api.LinuxPodSandboxConfig(security_context=sc),
    )
    return config, warning


def resources(container: Mapping[str, Any]) -> api.LinuxContainerResources:
    """requests.cpu → cpu_shares, limits.cpu → CFS quota over a 100 ms period, limits.memory → memory limit (the
    kubelet's conversion)."""
    res = container_resources(container)
    out = api.LinuxContainerResources(cpu_shares=milli_cpu_to_shares(res.cpu_request))
    if res.cpu_limit is not None:
        out.cpu_period = CFS_PERIOD_US
        out.cpu_quota = milli_cpu_to_quota(res.cpu_limit)
    if res.memory_limit is not None:
        out.memory_limit_in_bytes = res.memory_limit
    return out


def _security_context(pod: Mapping[str, Any], container: Mapping[str, Any]) -> api.LinuxContainerSecurityContext:
    spec = pod.get("spec") or {}
    sc = effective_context(pod, container)
    pod_sc = spec.get("securityContext") or {}
    caps = sc.get("capabilities") or {}
    out = api.LinuxContainerSecurityContext(
        capabilities=api.Capability(
            add_capabilities=[str(c) for c in caps.get("add") or []],
            drop_capabilities=[str(c) for c in caps.get("drop") or []],
        ),
        privileged=bool(sc.get("privileged")),
        namespace_options=_namespaces(spec),
        readonly_rootfs=bool(sc.get("readOnlyRootFilesystem")),
        supplemental_groups=[int(g) for g in pod_sc.get("supplementalGroups") or []],
        no_new_privs=sc.get("allowPrivilegeEscalation") is False,
    )
    if pod_sc.get("fsGroup") is not None:
        out.supplemental_groups.append(int(pod_sc["fsGroup"]))
    if sc.get("runAsUser") is not None:
        out.run_as_user.value = int(sc["runAsUser"])
    if sc.get("runAsGroup") is not None:
        out.run_as_group.value = int(sc["runAsGroup"])
    seccomp = _seccomp(sc)
    if seccomp is not None:
        out.seccomp.CopyFrom(seccomp)
    return out


def container_config(
    pod: Mapping[str, Any],
    uid: str,
    container: Mapping[str, Any],
    *,
    image: str,
    restart_count: int,
    command: Sequence[str],
    args: Sequence[str],
    env: Mapping[str, str],
    mounts: Sequence[Any],
    termination_log: Path | None,
) -> api.ContainerConfig:
    """A container's ContainerConfig; `mounts` are `volumes.Mount`s, `termination_log` the host file mounted at its
    terminationMessagePath."""
    name = str(container.get("name", ""))
    cri_mounts = [
        api.Mount(container_path=m.container_path, host_path=str(m.host_path), readonly=bool(m.read_only))
        for m in mounts
    ]
    message_path = str(container.get("terminationMessagePath") or "/dev/termination-log")
    if termination_log is not None:
        cri_mounts.append(api.Mount(container_path=message_path, host_path=str(termination_log)))
    return api.ContainerConfig(
        metadata=api.ContainerMetadata(name=name, attempt=restart_count),
        image=api.ImageSpec(image=image, user_specified_image=str(container.get("image", ""))),
        command=list(command),
        args=list(args),
        working_dir=str(container.get("workingDir") or ""),
        envs=[api.KeyValue(key=k, value=v) for k, v in env.items()],
        mounts=cri_mounts,
        labels={**_pod_labels(pod, uid), CONTAINER_NAME_LABEL: name},
        annotations={
            RESTART_COUNT_ANNOTATION: str(restart_count),
            TERMINATION_MESSAGE_PATH_ANNOTATION: message_path,
        },
        log_path=f"{name}/{restart_count}.log",
        stdin=bool(container.get("stdin")),
        stdin_once=bool(container.get("stdinOnce")),
        tty=bool(container.get("tty")),
        linux=api.LinuxContainerConfig(
            resources=resources(container), security_context=_security_context(pod, container)
        ),
    )
