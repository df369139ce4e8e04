"""DefaultTolerationSeconds admission (default-enabled in kube-apiserver): every Pod tolerates the
`node.kubernetes.io/not-ready` and `node.kubernetes.io/unreachable` NoExecute taints for 300 s unless it already
tolerates them (a toleration with that key, or an empty key, and the NoExecute or an empty effect).

The seconds come from --default-not-ready-toleration-seconds / --default-unreachable-toleration-seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation

__all__ = ["DEFAULT_TOLERATION_SECONDS", "DefaultTolerationSeconds"]

DEFAULT_TOLERATION_SECONDS: Final = 300
TAINT_NOT_READY: Final = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE: Final = "node.kubernetes.io/unreachable"


def _tolerates(tolerations: list[dict[str, Any]], key: str) -> bool:
    return any((t.get("key") in (key, "", None)) and (t.get("effect") in ("NoExecute", "", None)) for t in tolerations)


class DefaultTolerationSeconds:
    name = "DefaultTolerationSeconds"

    def __init__(
        self,
        not_ready_seconds: int = DEFAULT_TOLERATION_SECONDS,
        unreachable_seconds: int = DEFAULT_TOLERATION_SECONDS,
    ) -> None:
        self.not_ready_seconds = not_ready_seconds
        self.unreachable_seconds = unreachable_seconds

    @classmethod
    def from_flags(cls, flags: Mapping[str, Any]) -> DefaultTolerationSeconds:
        """From kube-apiserver's --default-not-ready-toleration-seconds / --default-unreachable-toleration-seconds."""

        def seconds(name: str) -> int:
            value = flags.get(name)
            return DEFAULT_TOLERATION_SECONDS if value is None or value == "" else int(value)

        return cls(seconds("default-not-ready-toleration-seconds"), seconds("default-unreachable-toleration-seconds"))

    def handles(self, op: Operation) -> bool:
        return op in (Operation.CREATE, Operation.UPDATE)

    async def admit(self, attrs: AdmissionAttributes) -> None:
        if attrs.group or attrs.resource != "pods" or attrs.subresource or not isinstance(attrs.obj, dict):
            return
        spec = attrs.obj.setdefault("spec", {})
        tolerations = list(spec.get("tolerations") or [])
        added = False
        for key, seconds in ((TAINT_NOT_READY, self.not_ready_seconds), (TAINT_UNREACHABLE, self.unreachable_seconds)):
            if not _tolerates(tolerations, key):
                tolerations.append(
                    {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
                )
                added = True
        if added:
            spec["tolerations"] = tolerations
