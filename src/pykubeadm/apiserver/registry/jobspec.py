"""Job spec rules shared by the Job and CronJob strategies (batch/v1): kube's validateJobSpec minus the selector rules,
which only a Job has (a CronJob's jobTemplate gets its selector when the Job is created)."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.registry.base import Obj, field_invalid, required
from pykubeadm.apiserver.registry.podspec import validate_pod_spec
from pykubeadm.apiserver.status import Cause

__all__ = ["nonnegative", "not_supported", "validate_job_spec"]

_COMPLETION_MODES = ("NonIndexed", "Indexed")
_REPLACEMENT_POLICIES = ("TerminatingOrFailed", "Failed")


def not_supported(path: str, value: Any, allowed: tuple[str, ...]) -> Cause:
    values = ", ".join(f'"{v}"' for v in allowed)
    return Cause("FieldValueNotSupported", f'Unsupported value: "{value}": supported values: {values}', path)


def nonnegative(spec: Obj, key: str, path: str) -> list[Cause]:
    v = spec.get(key)
    if v is None:
        return []
    if not isinstance(v, int) or isinstance(v, bool):
        return [field_invalid(f"{path}.{key}", v, "must be an integer")]
    return [field_invalid(f"{path}.{key}", v, "must be greater than or equal to 0")] if v < 0 else []


def validate_job_spec(spec: Any, path: str) -> list[Cause]:
    """Counts, completion mode, pod replacement policy and the pod template (restartPolicy OnFailure or Never)."""
    if not isinstance(spec, dict):
        return [required(path)]
    causes: list[Cause] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        causes += nonnegative(spec, key, path)
    mode = spec.get("completionMode")
    if mode is not None and mode not in _COMPLETION_MODES:
        causes.append(not_supported(f"{path}.completionMode", mode, _COMPLETION_MODES))
    if mode == "Indexed" and spec.get("completions") is None:
        causes.append(
            Cause("FieldValueRequired", "Required value: when completion mode is Indexed", f"{path}.completions")
        )
    policy = spec.get("podReplacementPolicy")
    if policy is not None and policy not in _REPLACEMENT_POLICIES:
        causes.append(not_supported(f"{path}.podReplacementPolicy", policy, _REPLACEMENT_POLICIES))
    tmpl = spec.get("template")
    if not isinstance(tmpl, dict):
        return [*causes, required(f"{path}.template")]
    pod = tmpl.get("spec")
    causes += validate_pod_spec(pod, f"{path}.template.spec")
    if isinstance(pod, dict):
        restart = pod.get("restartPolicy")
        if restart not in ("OnFailure", "Never"):
            causes.append(not_supported(f"{path}.template.spec.restartPolicy", restart or "", ("OnFailure", "Never")))
    return causes
