"""Admission interfaces (k8s.io/apiserver admission): the request's attributes, plugin protocols, errors.

A plugin declares `handles(op)` and implements `admit` (mutating: may change `attrs.obj` in place) and/or
`validate` (must not mutate). `chain.AdmissionChain` runs every mutating plugin before any validating one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.messages import StatusError, qualified_resource

__all__ = [
    "AdmissionAttributes",
    "AdmissionError",
    "MutatingPlugin",
    "Operation",
    "ValidatingPlugin",
    "forbidden",
]


class Operation(enum.Enum):
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    CONNECT = "CONNECT"


@dataclass
class AdmissionAttributes:
    """One write request as admission sees it. `obj` is the new object (CREATE/UPDATE; mutable), `old_obj` the stored
    one (UPDATE/DELETE). `resource` is the plural, `group` the API group ("" = core), `kind` the object's Kind.
    For a subresource request (pods/status, serviceaccounts/token, pods/eviction) `obj` is the request body."""

    operation: Operation
    resource: str
    user: UserInfo
    namespace: str = ""
    name: str = ""
    group: str = ""
    version: str = "v1"
    kind: str = ""
    subresource: str = ""
    obj: dict[str, Any] | None = None
    old_obj: dict[str, Any] | None = None
    dry_run: bool = False
    options: dict[str, Any] = field(default_factory=dict)


class AdmissionError(StatusError):
    """A rejected request; `status()` is the kube-apiserver Status object to send (HTTP `code`)."""


def forbidden(attrs: AdmissionAttributes, err: str, causes: list[dict[str, str]] | None = None) -> AdmissionError:
    """errors.NewForbidden(resource, name, err): `<res> "<name>" is forbidden: <err>` (no name: `<res> is forbidden`)."""
    qualified = qualified_resource(attrs.resource, attrs.group)
    name = attrs.name or ((attrs.obj or {}).get("metadata") or {}).get("name", "")
    message = f'{qualified} "{name}" is forbidden: {err}' if name else f"{qualified} is forbidden: {err}"
    details: dict[str, Any] = {"kind": attrs.resource}
    if name:
        details["name"] = name
    if attrs.group:
        details["group"] = attrs.group
    if causes:
        details["causes"] = causes
    return AdmissionError(403, "Forbidden", message, details)


def not_found(resource: str, group: str, name: str) -> AdmissionError:
    qualified = qualified_resource(resource, group)
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return AdmissionError(404, "NotFound", f'{qualified} "{name}" not found', details)


@runtime_checkable
class MutatingPlugin(Protocol):
    name: str

    def handles(self, op: Operation) -> bool: ...

    async def admit(self, attrs: AdmissionAttributes) -> None:
        """May change attrs.obj; raises AdmissionError to reject."""
        ...


@runtime_checkable
class ValidatingPlugin(Protocol):
    name: str

    def handles(self, op: Operation) -> bool: ...

    async def validate(self, attrs: AdmissionAttributes) -> None:
        """Must not mutate; raises AdmissionError to reject."""
        ...
