"""The CEL variables admission expressions see (ValidatingAdmissionPolicy, webhook matchConditions): `object`,
`oldObject`, `request` (the AdmissionRequest as a map), `params`, `namespaceObject` and `variables`, with one shared
engine environment."""

from __future__ import annotations

import functools
from typing import Any

from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation
from pykubeadm.cel import Environment

__all__ = ["activation", "admission_env", "request_map"]

Obj = dict[str, Any]


@functools.cache
def admission_env() -> Environment:
    return Environment(("object", "oldObject", "request", "params", "namespaceObject", "variables", "authorizer"))


def request_map(attrs: AdmissionAttributes) -> Obj:
    user: Obj = {"username": attrs.user.name, "groups": list(attrs.user.groups)}
    if attrs.user.uid:
        user["uid"] = attrs.user.uid
    if attrs.user.extra:
        user["extra"] = {k: list(v) for k, v in attrs.user.extra.items()}
    kind = {"group": attrs.group, "version": attrs.version, "kind": attrs.kind}
    resource = {"group": attrs.group, "version": attrs.version, "resource": attrs.resource}
    return {
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "subResource": attrs.subresource,
        "name": attrs.name,
        "namespace": attrs.namespace,
        "operation": attrs.operation.value,
        "userInfo": user,
        "dryRun": attrs.dry_run,
    }


def activation(attrs: AdmissionAttributes, params: Obj | None = None, namespace: Obj | None = None) -> Obj:
    return {
        "object": attrs.obj if attrs.operation is not Operation.DELETE else None,
        "oldObject": attrs.old_obj if attrs.operation is not Operation.CREATE else None,
        "request": request_map(attrs),
        "params": params,
        "namespaceObject": namespace,
        "variables": {},
        "authorizer": None,
    }
