"""The Pod Security Standards checks (k8s.io/pod-security-admission `policy/`), as evaluated by kube-apiserver v1.33.

Each check reads a Pod's metadata and spec (JSON dicts) and returns None (allowed) or a `(reason, detail)` pair worded
as kube words it. `evaluate(level, minor, meta, spec)` runs the checks of a level at a policy version in kube's order
(baseline check IDs sorted, then restricted ones; a restricted check replaces the baseline check it overrides), and
`describe()` joins the violations as `reason (detail), reason (detail)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pykubeadm.util.goquote import go_quote

__all__ = ["LATEST_MINOR", "Violation", "describe", "evaluate", "reasons"]

Obj = dict[str, Any]
#: One violation: (forbidden reason, forbidden detail).
Violation = tuple[str, str]
#: The newest policy version kube-apiserver v1.33 knows; "latest" and newer versions evaluate as this one.
LATEST_MINOR = 33


def _plural(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _quote(items: list[str]) -> str:
    return ('"' + '", "'.join(items) + '"') if items else ""


def _containers(spec: Obj) -> Iterator[Obj]:
    """Init containers, containers, then ephemeral containers (the visitor's order)."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                yield c


def _sc(obj: Obj) -> Obj:
    sc = obj.get("securityContext")
    return sc if isinstance(sc, dict) else {}


def _windows(spec: Obj) -> bool:
    return ((spec.get("os") or {}).get("name")) == "windows"


def _named(what: str, names: list[str]) -> str:
    return f"{_plural(what, what + 's', len(names))} {_quote(names)}"


def _setters(pod_bad: bool, containers: list[str]) -> list[str]:
    out = ["pod"] if pod_bad else []
    if containers:
        out.append(_named("container", containers))
    return out


# --- baseline ----------------------------------------------------------------------------------------------------


def _host_namespaces(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    found = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True]
    return ("host namespaces", ", ".join(found)) if found else None


def _privileged(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("privileged") is True]
    return ("privileged", f"{_named('container', bad)} must not set securityContext.privileged=true") if bad else None


_DEFAULT_CAPABILITIES = frozenset(
    {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP",
     "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
)  # fmt: skip


def _added_capabilities(c: Obj) -> list[str]:
    caps = _sc(c).get("capabilities")
    return [str(x) for x in ((caps or {}).get("add") or [])] if isinstance(caps, dict) else []


def _capabilities_baseline(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    bad: list[str] = []
    caps: set[str] = set()
    for c in _containers(spec):
        extra = [x for x in _added_capabilities(c) if x not in _DEFAULT_CAPABILITIES]
        if extra:
            bad.append(c.get("name", ""))
            caps.update(extra)
    if not bad:
        return None
    return (
        "non-default capabilities",
        f"{_named('container', bad)} must not include {_quote(sorted(caps))} in securityContext.capabilities.add",
    )


def _host_path_volumes(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    bad = [
        v.get("name", "") for v in spec.get("volumes") or [] if isinstance(v, dict) and v.get("hostPath") is not None
    ]
    return ("hostPath volumes", _named("volume", bad)) if bad else None


def _host_ports(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    bad: list[str] = []
    ports: set[str] = set()
    for c in _containers(spec):
        used = [str(p.get("hostPort")) for p in c.get("ports") or [] if isinstance(p, dict) and p.get("hostPort")]
        if used:
            bad.append(c.get("name", ""))
            ports.update(used)
    if not bad:
        return None
    uses = _plural("uses", "use", len(bad))
    return ("hostPort", f"{_named('container', bad)} {uses} {_plural('hostPort', 'hostPorts', len(ports))} "
            + ", ".join(sorted(ports)))  # fmt: skip


_APPARMOR_PREFIX = "container.apparmor.security.beta.kubernetes.io/"


def _app_armor(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    setters: list[str] = []
    values: set[str] = set()
    pod_profile = _sc(spec).get("appArmorProfile")
    if isinstance(pod_profile, dict) and pod_profile.get("type") not in ("RuntimeDefault", "Localhost"):
        setters.append("pod")
        values.add(str(pod_profile.get("type") or ""))
    bad: list[str] = []
    for c in _containers(spec):
        profile = _sc(c).get("appArmorProfile")
        if isinstance(profile, dict) and profile.get("type") not in ("RuntimeDefault", "Localhost"):
            bad.append(c.get("name", ""))
            values.add(str(profile.get("type") or ""))
    if bad:
        setters.append(_named("container", bad))
    annotations = [
        f"{k}={go_quote(str(v))}"
        for k, v in ((meta.get("annotations") or {}).items())
        if k.startswith(_APPARMOR_PREFIX) and v and v != "runtime/default" and not str(v).startswith("localhost/")
    ]
    value_list = sorted(values)
    if annotations:
        value_list += sorted(annotations)
        setters.append(_plural("annotation", "annotations", len(annotations)))
    if not setters:
        return None
    reason = _plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(value_list))
    return reason, f"{' and '.join(setters)} must not set AppArmor profile type to {_quote(value_list)}"


def _se_linux(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    allowed = {"", "container_t", "container_init_t", "container_kvm_t"}
    if minor >= 31:
        allowed.add("container_engine_t")
    bad_types: set[str] = set()
    flags = {"user": False, "role": False}

    def valid(opts: Obj) -> bool:
        ok = True
        if str(opts.get("type") or "") not in allowed:
            ok = False
            bad_types.add(str(opts.get("type")))
        for key in ("user", "role"):
            if opts.get(key):
                ok = False
                flags[key] = True
        return ok

    pod_opts = _sc(spec).get("seLinuxOptions")
    pod_bad = isinstance(pod_opts, dict) and not valid(pod_opts)
    bad = [
        c.get("name", "")
        for c in _containers(spec)
        if isinstance(_sc(c).get("seLinuxOptions"), dict) and not valid(_sc(c)["seLinuxOptions"])
    ]
    setters = _setters(pod_bad, bad)
    if not setters:
        return None
    data = [f"{_plural('type', 'types', len(bad_types))} {_quote(sorted(bad_types))}"] if bad_types else []
    data += [f"{key} may not be set" for key in ("user", "role") if flags[key]]
    return "seLinuxOptions", f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}"


def _proc_mount(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    bad: list[str] = []
    types: set[str] = set()
    for c in _containers(spec):
        pm = _sc(c).get("procMount")
        if pm is not None and pm != "Default":
            bad.append(c.get("name", ""))
            types.add(str(pm))
    if not bad:
        return None
    return "procMount", f"{_named('container', bad)} must not set securityContext.procMount to {_quote(sorted(types))}"


_SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"


def _seccomp_type(obj: Obj) -> tuple[bool, str]:
    """(profile set, its type) of a pod or container securityContext."""
    profile = _sc(obj).get("seccompProfile")
    if not isinstance(profile, dict):
        return False, ""
    return True, str(profile.get("type") or "")


def _seccomp_explicit(spec: Obj) -> tuple[bool, bool, list[str], list[str], set[str]]:
    """(pod set, pod bad, bad containers, unset containers, bad values)."""
    values: set[str] = set()
    pod_set, pod_type = _seccomp_type(spec)
    pod_bad = pod_set and pod_type not in ("RuntimeDefault", "Localhost")
    if pod_bad:
        values.add(pod_type)
    bad: list[str] = []
    unset: list[str] = []
    for c in _containers(spec):
        is_set, t = _seccomp_type(c)
        if is_set and t not in ("RuntimeDefault", "Localhost"):
            bad.append(c.get("name", ""))
            values.add(t)
        elif not is_set:
            unset.append(c.get("name", ""))
    return pod_set and not pod_bad, pod_bad, bad, unset, values


def _seccomp_baseline(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    if minor < 19:
        annotations = meta.get("annotations") or {}
        keys = [_SECCOMP_POD_ANNOTATION] + [_SECCOMP_CONTAINER_PREFIX + c.get("name", "") for c in _containers(spec)]
        forbidden = sorted(
            {
                f"{k}={go_quote(str(annotations[k]))}"
                for k in keys
                if k in annotations
                and not (
                    annotations[k] in ("runtime/default", "docker/default")
                    or str(annotations[k]).startswith("localhost/")
                )
            }
        )
        if not forbidden:
            return None
        return (
            "seccompProfile",
            f"forbidden {_plural('annotation', 'annotations', len(forbidden))} {', '.join(forbidden)}",
        )
    _, pod_bad, bad, _, values = _seccomp_explicit(spec)
    setters = _setters(pod_bad, bad)
    if not setters:
        return None
    return (
        "seccompProfile",
        f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {_quote(sorted(values))}",
    )


_SAFE_SYSCTLS = {
    0: {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start"},
    27: {"net.ipv4.ip_local_reserved_ports"},
    29: {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
         "net.ipv4.tcp_keepalive_probes"},
    32: {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"},
}  # fmt: skip


def _sysctls(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    allowed = set().union(*(names for since, names in _SAFE_SYSCTLS.items() if minor >= since))
    bad = [
        str(s.get("name"))
        for s in _sc(spec).get("sysctls") or []
        if isinstance(s, dict) and s.get("name") not in allowed
    ]
    return ("forbidden sysctls", ", ".join(bad)) if bad else None


def _windows_host_process(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    def host_process(obj: Obj) -> bool:
        return ((_sc(obj).get("windowsOptions") or {}).get("hostProcess")) is True

    setters = _setters(host_process(spec), [c.get("name", "") for c in _containers(spec) if host_process(c)])
    if not setters:
        return None
    return "hostProcess", f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true"


# --- restricted --------------------------------------------------------------------------------------------------


def _allow_privilege_escalation(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    if minor >= 25 and _windows(spec):
        return None
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False]
    if not bad:
        return None
    return (
        "allowPrivilegeEscalation != false",
        f"{_named('container', bad)} must set securityContext.allowPrivilegeEscalation=false",
    )


def _capabilities_restricted(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    if minor >= 25 and _windows(spec):
        return None
    missing_drop: list[str] = []
    adding: list[str] = []
    forbidden: set[str] = set()
    for c in _containers(spec):
        caps = _sc(c).get("capabilities")
        if not isinstance(caps, dict):
            missing_drop.append(c.get("name", ""))
            continue
        if "ALL" not in (caps.get("drop") or []):
            missing_drop.append(c.get("name", ""))
        extra = [str(x) for x in caps.get("add") or [] if x != "NET_BIND_SERVICE"]
        if extra:
            adding.append(c.get("name", ""))
            forbidden.update(extra)
    details = []
    if missing_drop:
        details.append(f'{_named("container", missing_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(
            f"{_named('container', adding)} must not include {_quote(sorted(forbidden))} in "
            "securityContext.capabilities.add"
        )
    return ("unrestricted capabilities", "; ".join(details)) if details else None


_ALLOWED_VOLUME_SOURCES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
                           "persistentVolumeClaim", "projected", "secret")  # fmt: skip
_RESTRICTED_VOLUME_SOURCES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi",
                              "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile",
                              "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume",
                              "scaleIO", "storageos")  # fmt: skip


def _restricted_volumes(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    bad: list[str] = []
    types: set[str] = set()
    for v in spec.get("volumes") or []:
        if not isinstance(v, dict) or any(v.get(k) is not None for k in _ALLOWED_VOLUME_SOURCES):
            continue
        bad.append(v.get("name", ""))
        types.add(next((k for k in _RESTRICTED_VOLUME_SOURCES if v.get(k) is not None), "unknown"))
    if not bad:
        return None
    uses = _plural("uses", "use", len(bad))
    kinds = _plural("restricted volume type", "restricted volume types", len(types))
    return "restricted volume types", f"{_named('volume', bad)} {uses} {kinds} {_quote(sorted(types))}"


def _run_as_non_root(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    pod_value = _sc(spec).get("runAsNonRoot")
    pod_bad = pod_value is False
    explicit: list[str] = []
    implicit: list[str] = []
    for c in _containers(spec):
        value = _sc(c).get("runAsNonRoot")
        if value is not None:
            if value is False:
                explicit.append(c.get("name", ""))
        elif pod_value is not True:
            implicit.append(c.get("name", ""))
    setters = _setters(pod_bad, explicit)
    if setters:
        return "runAsNonRoot != true", f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false"
    if implicit:
        return (
            "runAsNonRoot != true",
            f"pod or {_named('container', implicit)} must set securityContext.runAsNonRoot=true",
        )
    return None


def _run_as_user(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    def root(obj: Obj) -> bool:
        value = _sc(obj).get("runAsUser")
        return value is not None and value == 0 and not isinstance(value, bool)

    setters = _setters(root(spec), [c.get("name", "") for c in _containers(spec) if root(c)])
    return ("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0") if setters else None


def _seccomp_restricted(meta: Obj, spec: Obj, minor: int) -> Violation | None:
    if minor >= 25 and _windows(spec):
        return None
    pod_ok, pod_bad, bad, unset, values = _seccomp_explicit(spec)
    setters = _setters(pod_bad, bad)
    if setters:
        return (
            "seccompProfile",
            f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {_quote(sorted(values))}",
        )
    implicit = [] if pod_ok else unset
    if implicit:
        return (
            "seccompProfile",
            f'pod or {_named("container", implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" '
            'or "Localhost"',
        )
    return None


Check = Callable[[Obj, Obj, int], "Violation | None"]


@dataclass(frozen=True)
class _Entry:
    id: str
    check: Check
    since: int = 0  # the first policy minor version the check exists at
    overrides: str = ""  # the baseline check ID a restricted check replaces


_BASELINE = (
    _Entry("appArmorProfile", _app_armor),
    _Entry("capabilities_baseline", _capabilities_baseline),
    _Entry("hostNamespaces", _host_namespaces),
    _Entry("hostPathVolumes", _host_path_volumes),
    _Entry("hostPorts", _host_ports),
    _Entry("privileged", _privileged),
    _Entry("procMount", _proc_mount),
    _Entry("seLinuxOptions", _se_linux),
    _Entry("seccompProfile_baseline", _seccomp_baseline),
    _Entry("sysctls", _sysctls),
    _Entry("windowsHostProcess", _windows_host_process),
)
_RESTRICTED = (
    _Entry("allowPrivilegeEscalation", _allow_privilege_escalation, since=8),
    _Entry("capabilities_restricted", _capabilities_restricted, since=22, overrides="capabilities_baseline"),
    _Entry("restrictedVolumes", _restricted_volumes, overrides="hostPathVolumes"),
    _Entry("runAsNonRoot", _run_as_non_root),
    _Entry("runAsUser", _run_as_user, since=23),
    _Entry("seccompProfile_restricted", _seccomp_restricted, since=19, overrides="seccompProfile_baseline"),
)


def _checks(level: str, minor: int) -> list[_Entry]:
    if level == "baseline":
        return list(_BASELINE)
    restricted = [e for e in _RESTRICTED if minor >= e.since]
    overridden = {e.overrides for e in restricted}
    return [e for e in _BASELINE if e.id not in overridden] + restricted


def evaluate(level: str, minor: int | None, meta: Obj, spec: Obj) -> list[Violation]:
    """The violations of a Pod (metadata, spec) against `level` at policy version v1.`minor` (None = latest)."""
    if level == "privileged":
        return []
    minor = LATEST_MINOR if minor is None or minor > LATEST_MINOR else minor
    found = []
    for entry in _checks(level, minor):
        v = entry.check(meta or {}, spec or {}, minor)
        if v is not None:
            found.append(v)
    return found


def describe(violations: list[Violation]) -> str:
    """kube's ForbiddenDetail: `reason (detail), reason (detail)`."""
    return ", ".join(f"{r} ({d})" if d else r for r, d in violations)


def reasons(violations: list[Violation]) -> str:
    """kube's ForbiddenReason: the reasons alone, comma-separated."""
    return ", ".join(r for r, _ in violations)
