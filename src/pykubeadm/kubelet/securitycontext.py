"""A container's securityContext as the kubelet reads it, whichever runtime runs the container: the effective context
(the Pod's merged under the container's, as kube's `securitycontext.DetermineEffectiveSecurityContext`) and the
kubelet's runAsNonRoot check (`verifyRunAsNonRoot`, same messages). Used by the CRI runtime's configs
(`cri.podconfig`) and the built-in runtime's confinement (`builtin.confinement`). Errors are `SecurityContextError`
(the container's CreateContainerConfigError).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Obj", "SecurityContextError", "effective_context", "verify_run_as_non_root"]

Obj = Mapping[str, Any]

#: Pod-level fields that apply to every container (PodSecurityContext ∩ SecurityContext).
_POD_LEVEL = ("runAsUser", "runAsGroup", "runAsNonRoot", "seccompProfile", "seLinuxOptions", "appArmorProfile")


class SecurityContextError(Exception):
    """The container's securityContext cannot be honoured or breaks a policy (CreateContainerConfigError)."""


def effective_context(pod: Obj, container: Obj) -> dict[str, Any]:
    """The container's securityContext over the Pod's (kube's DetermineEffectiveSecurityContext)."""
    pod_sc = (pod.get("spec") or {}).get("securityContext") or {}
    out: dict[str, Any] = {k: pod_sc[k] for k in _POD_LEVEL if pod_sc.get(k) is not None}
    out.update({k: v for k, v in (container.get("securityContext") or {}).items() if v is not None})
    return out


def _pod_desc(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('name', '')}_{meta.get('namespace', '')}({meta.get('uid', '')})"


def verify_run_as_non_root(pod: Obj, container: Obj, sc: Obj, image_uid: int) -> None:
    """The kubelet's verifyRunAsNonRoot (same messages), for the user the image runs as."""
    if not sc.get("runAsNonRoot"):
        return
    where = f'(pod: "{_pod_desc(pod)}", container: {container.get("name", "")})'
    if sc.get("runAsUser") is not None:
        if int(sc["runAsUser"]) == 0:
            raise SecurityContextError(f"container's runAsUser breaks non-root policy {where}")
        return
    if image_uid == 0:
        raise SecurityContextError(f"container has runAsNonRoot and image will run as root {where}")
