"""API errors as kube-apiserver's `Status` objects, with its exact reasons and messages; used by handlers and the store.

`ApiError` is raised anywhere in the request path; the recovery middleware turns it into a JSON response. Message
formats follow apimachinery's `pkg/api/errors` (see reference/apiserver-wire-facts.md §3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ApiError",
    "Cause",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "forbidden",
    "gone",
    "internal",
    "invalid",
    "method_not_allowed",
    "not_found",
    "qualified",
    "status_success",
    "unsupported_media_type",
]


@dataclass(frozen=True)
class Cause:
    reason: str  # FieldValueRequired, FieldValueInvalid, FieldValueNotSupported, FieldValueForbidden, ...
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        d = {"reason": self.reason, "message": self.message}
        if self.field:
            d["field"] = self.field
        return d


@dataclass
class ApiError(Exception):
    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    causes: list[Cause] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def to_status(self) -> dict[str, Any]:
        st: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
        st["message"] = self.message
        if self.reason:
            st["reason"] = self.reason
        details = dict(self.details or {})
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if details or self.details is not None:
            st["details"] = details
        st["code"] = self.code
        return st


def qualified(plural: str, group: str) -> str:
    """`secrets`, `deployments.apps`: how messages name a resource."""
    return f"{plural}.{group}" if group else plural


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    d["kind"] = kind
    return d


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{qualified(plural, group)} "{name}" not found', _details(name, group, plural))


def not_found_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        409, "AlreadyExists", f'{qualified(plural, group)} "{name}" already exists', _details(name, group, plural)
    )


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    msg = f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": {why}'
    return ApiError(409, "Conflict", msg, _details(name, group, plural))


OPTIMISTIC_LOCK_MSG = "the object has been modified; please apply your changes to the latest version and try again"


def forbidden(plural: str, group: str, name: str, why: str) -> ApiError:
    res = qualified(plural, group)
    prefix = f'{res} "{name}"' if name else res
    return ApiError(403, "Forbidden", f"{prefix} is forbidden: {why}", _details(name, group, plural))


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> ApiError:
    # the message lists each distinct error once (field.ErrorList.ToAggregate); the causes keep every one
    parts = list(dict.fromkeys(f"{c.field}: {c.message}" if c.field else c.message for c in causes))
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    msg = f'{qualified(kind, group)} "{name}" is invalid: {joined}'
    return ApiError(422, "Invalid", msg, _details(name, group, kind), causes=list(causes))


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed() -> ApiError:
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    msg = f"the body of the request was in an unknown format - accepted media types include: {', '.join(accepted)}"
    return ApiError(415, "UnsupportedMediaType", msg)  # negotiation's errUnsupportedMediaType: no details


def gone(message: str) -> ApiError:
    return ApiError(410, "Gone", message)


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def internal(err: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {err}", {"causes": [{"message": err}]})


def status_success(plural: str, group: str, name: str, uid: str) -> dict[str, Any]:
    details = _details(name, group, plural)
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
