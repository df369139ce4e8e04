"""pykubeadm's exception hierarchy and the exit code of each class; the CLI's one exit point maps them.

KubeadmError                  exit 1  any failure with a message for the user
├── ValidationError           exit 3  bad config or flags; carries every FieldError at once
├── PreflightError            exit 2  failed preflight checks (names them; --ignore-preflight-errors)
├── CertError                         a certificate or key file is missing, unreadable or non-compliant
├── KubeconfigError                   a kubeconfig file is missing, unreadable or wrong
├── PhaseError                        "error execution phase <name>: <cause>" (wraps the cause)
└── NotImplementedPhase               a phase whose issue has not landed yet
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "CertError",
    "FieldError",
    "KubeadmError",
    "KubeconfigError",
    "NotImplementedPhase",
    "PhaseError",
    "PreflightError",
    "ValidationError",
]


class KubeadmError(Exception):
    """A failure explained to the user; `exit_code` is what the process exits with."""

    exit_code: int = 1


@dataclass(frozen=True)
class FieldError:
    """One invalid field, formatted as kubeadm/apimachinery field errors are: `path: Invalid value: "v": detail`."""

    path: str
    value: object
    detail: str
    kind: str = "Invalid value"  # or "Required value", "Unsupported value", "Forbidden", "Duplicate value"

    def __str__(self) -> str:
        if self.kind in ("Required value", "Forbidden"):
            return f"{self.path}: {self.kind}" + (f": {self.detail}" if self.detail else "")
        value = f'"{self.value}"' if isinstance(self.value, str) else str(self.value)
        return f"{self.path}: {self.kind}: {value}" + (f": {self.detail}" if self.detail else "")


class ValidationError(KubeadmError):
    """Invalid configuration or flags; all problems are reported together."""

    exit_code = 3

    def __init__(self, errors: Iterable[FieldError | str]):
        self.errors = list(errors)
        super().__init__(self._format())

    def _format(self) -> str:
        items = [str(e) for e in self.errors]
        if len(items) == 1:
            return items[0]
        return "[" + ", ".join(items) + "]"


class PreflightError(KubeadmError):
    exit_code = 2


class CertError(KubeadmError):
    pass


class KubeconfigError(KubeadmError):
    pass


class PhaseError(KubeadmError):
    """A phase failed; the message is kubeadm's "error execution phase <name>: <cause>"."""

    def __init__(self, phase: str, cause: BaseException):
        self.phase = phase
        self.cause = cause
        self.exit_code = getattr(cause, "exit_code", 1)
        super().__init__(f"error execution phase {phase}: {cause}")


class NotImplementedPhase(KubeadmError):
    def __init__(self, phase: str, issue: str):
        super().__init__(f"phase {phase!r} is not implemented yet ({issue})")
