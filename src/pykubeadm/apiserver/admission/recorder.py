"""What admission tells the client and the audit log about one request: `Warning` headers and audit annotations.

kube-apiserver's `warning.AddWarning(ctx, …)` and `attrs.AddAnnotation(…)`: plugins call `warn()` / `annotate()`
from anywhere inside the request; `begin()` (the apiserver's admission-record middleware) starts a fresh record per
request, the response carries its warnings (deduplicated, in order) and the audit event its annotations.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field

__all__ = ["RequestRecord", "annotate", "begin", "current", "warn"]


@dataclass
class RequestRecord:
    warnings: list[str] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)


_CURRENT: ContextVar[RequestRecord | None] = ContextVar("admission_record", default=None)


def begin() -> RequestRecord:
    """A fresh record for the request being served (replaces any earlier one in this task)."""
    record = RequestRecord()
    _CURRENT.set(record)
    return record


def current() -> RequestRecord | None:
    return _CURRENT.get()


def warn(text: str) -> None:
    """Add a warning for the client (kubectl prints `Warning: <text>`); repeats are dropped."""
    record = _CURRENT.get()
    if record is not None and text and text not in record.warnings:
        record.warnings.append(text)


def annotate(key: str, value: str) -> None:
    """Add an audit annotation; the first value of a key stands, as kube's AddAnnotation keeps it."""
    record = _CURRENT.get()
    if record is not None:
        record.annotations.setdefault(key, value)
