"""kube-apiserver's exact 401/403 texts and Status bodies (responsewriters.forbiddenMessage + errors.NewForbidden).

The core's authorization middleware calls `forbidden_status(attrs, reason)` when the decision is not ALLOW and
`unauthorized_status()` when authentication fails.
"""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.authz.attributes import Attributes

__all__ = [
    "StatusError",
    "forbidden_message",
    "forbidden_status",
    "invalid_error",
    "qualified_resource",
    "unauthorized_status",
]


class StatusError(Exception):
    """An API error carrying kube-apiserver's Status fields; `status()` is the body to send with HTTP `code`."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details:
            body["details"] = self.details
        body["code"] = self.code  # kube's field order: ... reason, details, code
        return body


def invalid_error(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> StatusError:
    """422 Invalid: `<Kind>[.<group>] "<name>" is invalid: <field>: <msg>` (several: `[a, b]`).
    `causes` are (reason, field, message-without-field) triples, e.g. ("FieldValueRequired", "spec.token", "Required value")."""
    texts = [f"{f}: {m}" for _, f, m in causes]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    qualified = f"{kind}.{group}" if group else kind
    details: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "causes": [{"reason": r, "message": m, "field": f} for r, f, m in causes],
    }
    if group:
        details["group"] = group
    return StatusError(422, "Invalid", f'{qualified} "{name}" is invalid: {joined}', details)


def qualified_resource(resource: str, group: str) -> str:
    """`secrets`, `certificatesigningrequests.certificates.k8s.io` (GroupResource.String())."""
    return f"{resource}.{group}" if group else resource


def _user_cannot(attrs: Attributes) -> str:
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" {where}'


def forbidden_message(attrs: Attributes, reason: str = "") -> str:
    """The full Status message, e.g. `secrets "x" is forbidden: User "u" cannot get resource "secrets" in API group ""
    in the namespace "kube-system"`; the authorizer's reason, if any, is appended after `: `."""
    err = _user_cannot(attrs)
    if reason:
        err = f"{err}: {reason}"
    if not attrs.resource_request or not attrs.resource:
        return f"forbidden: {err}"
    qualified = qualified_resource(attrs.resource, attrs.api_group)
    if attrs.name:
        return f'{qualified} "{attrs.name}" is forbidden: {err}'
    return f"{qualified} is forbidden: {err}"


def forbidden_status(attrs: Attributes, reason: str = "") -> dict[str, Any]:
    """A 403 `Status` object for a denied request."""
    details: dict[str, Any] = {}
    if attrs.resource_request:
        if attrs.name:
            details["name"] = attrs.name
        if attrs.api_group:
            details["group"] = attrs.api_group
        if attrs.resource:
            details["kind"] = attrs.resource
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": forbidden_message(attrs, reason),
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }


def unauthorized_status() -> dict[str, Any]:
    """The 401 `Status` kube-apiserver sends for missing/invalid credentials (no details)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }
