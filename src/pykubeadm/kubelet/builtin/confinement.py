"""What confines a built-in container's process: its effective securityContext (`kubelet.securitycontext`) as the
options of the sandbox launcher.

Used by the built-in pod worker for every API Pod container (through `containment`): `confinement(pod, container,
image_uid)` checks runAsNonRoot as the kubelet does (`securitycontext.verify_run_as_non_root`) and returns a
`Confinement` whose `launcher_args()` are the `pod-sandbox` options (native/pod-sandbox.c: identity, capabilities,
no_new_privs, seccomp, read-only root, procMount). Where containers cannot be isolated (the kubelet is not root,
namespaces refused), `unconfinable_fields(...)` names the fields that cannot be honoured, so the Pod is refused instead
of run pretending to be confined. Errors are `securitycontext.SecurityContextError` (CreateContainerConfigError).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pykubeadm.kubelet.securitycontext import Obj, SecurityContextError, effective_context, verify_run_as_non_root

__all__ = [
    "CAPABILITIES",
    "DEFAULT_CAPABILITIES",
    "PAUSE_USER",
    "Confinement",
    "confinement",
    "unconfinable_fields",
]

_CAP_NAMES = (  # in bit order (<linux/capability.h>)
    "CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE "
    "NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT "
    "SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE "
    "AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ "
    "PERFMON BPF CHECKPOINT_RESTORE"
)
#: Linux capability names (without CAP_) → bit number.
CAPABILITIES: dict[str, int] = {name: bit for bit, name in enumerate(_CAP_NAMES.split())}
#: What containerd gives a container that asks for nothing (its oci.DefaultCapabilities, Docker's list).
DEFAULT_CAPABILITIES = (
    "CHOWN",
    "DAC_OVERRIDE",
    "FSETID",
    "FOWNER",
    "MKNOD",
    "NET_RAW",
    "SETGID",
    "SETUID",
    "SETFCAP",
    "SETPCAP",
    "NET_BIND_SERVICE",
    "SYS_CHROOT",
    "KILL",
    "AUDIT_WRITE",
)
_ALL_CAPS = (1 << len(CAPABILITIES)) - 1
#: The user the native pause program runs as (registry.k8s.io/pause's image USER 65535:65535).
PAUSE_USER = 65535


@dataclass(frozen=True)
class Confinement:
    """What the launcher applies to one container (see native/pod-sandbox.c)."""

    uid: int | None = None
    gid: int | None = None
    groups: tuple[int, ...] = ()
    caps: int = _ALL_CAPS
    no_new_privs: bool = False
    seccomp: bool = False
    privileged: bool = False
    read_only_root: bool = False
    unmasked_proc: bool = False

    def launcher_args(self) -> list[str]:
        out: list[str] = []
        if self.privileged:
            out.append("-P")
        if self.unmasked_proc:
            out.append("-M")
        if self.uid is not None:
            out += ["-u", str(self.uid)]
        if self.gid is not None:
            out += ["-g", str(self.gid)]
        if self.groups:
            out += ["-G", ",".join(str(g) for g in self.groups)]
        out += ["-c", format(self.caps, "x")]
        if self.no_new_privs:
            out.append("-N")
        if self.seccomp:
            out.append("-S")
        return out

    @property
    def unconfined(self) -> bool:
        """Nothing beyond the namespaces and the root layer: the process keeps root and every capability."""
        return (
            self.privileged
            and self.uid is None
            and self.gid is None
            and not self.groups
            and not self.seccomp
            and not self.no_new_privs
        )


def _cap_mask(names: Any, field: str) -> int:
    mask = 0
    for raw in names or ():
        name = str(raw).upper().removeprefix("CAP_")
        if name == "ALL":
            mask |= _ALL_CAPS
            continue
        if name not in CAPABILITIES:
            raise SecurityContextError(f"{field}: unknown capability {raw!r}")
        mask |= 1 << CAPABILITIES[name]
    return mask


def _seccomp(sc: Obj, field: str) -> bool:
    profile = sc.get("seccompProfile") or {}
    kind = profile.get("type") or "Unconfined"
    if kind == "RuntimeDefault":
        return True
    if kind == "Unconfined":
        return False
    raise SecurityContextError(
        f"{field}.seccompProfile: type {kind!r} is not supported by the built-in runtime (use RuntimeDefault)"
    )


def confinement(pod: Obj, container: Obj, *, image_uid: int = 0, seccomp_available: bool = True) -> Confinement:
    """The container's Confinement; SecurityContextError (CreateContainerConfigError) with the kubelet's message."""
    sc = effective_context(pod, container)
    field = "securityContext"
    verify_run_as_non_root(pod, container, sc, image_uid)
    pod_sc = (pod.get("spec") or {}).get("securityContext") or {}
    if pod_sc.get("sysctls"):
        names = ", ".join(str(s.get("name")) for s in pod_sc["sysctls"])
        raise SecurityContextError(
            f"spec.securityContext.sysctls: the built-in runtime cannot set {names}: containers share the node's "
            "network and IPC namespaces, so a namespaced sysctl would change the node"
        )
    for name in ("seLinuxOptions", "appArmorProfile", "windowsOptions"):
        if sc.get(name):
            raise SecurityContextError(f"{field}.{name}: not supported by the built-in runtime (no SELinux/AppArmor)")
    privileged = bool(sc.get("privileged"))
    caps = _ALL_CAPS if privileged else _cap_mask(DEFAULT_CAPABILITIES, field)
    if not privileged:
        wanted = sc.get("capabilities") or {}
        caps = (caps & ~_cap_mask(wanted.get("drop"), f"{field}.capabilities.drop")) | _cap_mask(
            wanted.get("add"), f"{field}.capabilities.add"
        )
    seccomp = _seccomp(sc, field) and not privileged
    if seccomp and not seccomp_available:
        raise SecurityContextError(
            f"{field}.seccompProfile: RuntimeDefault cannot be honoured: the sandbox launcher was built without "
            "libseccomp (install libseccomp-dev and run scripts/setup.sh)"
        )
    uid = sc.get("runAsUser")
    gid = sc.get("runAsGroup")
    groups = [int(g) for g in pod_sc.get("supplementalGroups") or ()]
    if pod_sc.get("fsGroup") is not None:
        groups.append(int(pod_sc["fsGroup"]))
    if uid is None and image_uid:
        uid = image_uid
        gid = image_uid if gid is None else gid
    if gid is not None:
        groups = [int(gid), *groups]  # the primary group is among the process's groups, as runc sets them
    return Confinement(
        uid=None if uid is None else int(uid),
        gid=None if gid is None else int(gid),
        groups=tuple(dict.fromkeys(groups)),
        caps=caps,
        no_new_privs=sc.get("allowPrivilegeEscalation") is False,
        seccomp=seccomp,
        privileged=privileged,
        read_only_root=bool(sc.get("readOnlyRootFilesystem")),
        unmasked_proc=sc.get("procMount") == "Unmasked",
    )


def unconfinable_fields(pod: Obj, container: Obj) -> list[str]:
    """The fields of the container's securityContext and resources that confine it, by their paths: without
    isolation none of them can be honoured (an empty list: it may run unconfined, as it asks)."""
    spec = pod.get("spec") or {}
    pod_sc = spec.get("securityContext") or {}
    ct_sc = container.get("securityContext") or {}
    out = []
    for key in ("runAsUser", "runAsGroup", "seccompProfile"):
        if pod_sc.get(key) is not None:
            out.append(f"spec.securityContext.{key}")
    if pod_sc.get("runAsNonRoot"):
        out.append("spec.securityContext.runAsNonRoot")
    for key in ("supplementalGroups", "fsGroup", "sysctls"):
        if pod_sc.get(key):
            out.append(f"spec.securityContext.{key}")
    name = container.get("name", "")
    for key in ("runAsUser", "runAsGroup", "seccompProfile", "capabilities", "procMount"):
        if ct_sc.get(key) not in (None, {}, "Default") and not (key == "capabilities" and not ct_sc[key].get("drop")):
            out.append(f"containers[{name}].securityContext.{key}")
    for key in ("runAsNonRoot", "readOnlyRootFilesystem"):
        if ct_sc.get(key):
            out.append(f"containers[{name}].securityContext.{key}")
    if ct_sc.get("allowPrivilegeEscalation") is False:
        out.append(f"containers[{name}].securityContext.allowPrivilegeEscalation")
    limits = (container.get("resources") or {}).get("limits") or {}
    for res in ("cpu", "memory"):
        if res in limits:
            out.append(f"containers[{name}].resources.limits.{res}")
    return out
