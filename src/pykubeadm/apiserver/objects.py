"""Read access to stored API objects for authenticators, authorizers and admission plugins (ObjectSource protocol).

The HTTP/registry side implements it over the store (with watch-fed caches where reads are hot, e.g. RBAC);
authn/authz/admission code depends only on this protocol, so it can be unit-tested with `DictObjectSource`.
Resources are named as kube-apiserver's RBAC does: `plural` for the core group, `plural.group` otherwise
(`secrets`, `clusterroles.rbac.authorization.k8s.io`, `certificatesigningrequests.certificates.k8s.io`).
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["DictObjectSource", "ObjectSource"]

Obj = dict[str, Any]


class ObjectSource(Protocol):
    async def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        """One object as its JSON dict, or None. `namespace` is "" for cluster-scoped resources."""
        ...

    async def list(self, resource: str, namespace: str | None = None) -> list[Obj]:
        """All objects of a resource (in one namespace, or all when None)."""
        ...


class DictObjectSource:
    """An in-memory ObjectSource for unit tests: {(resource, namespace, name): obj}."""

    def __init__(self, objects: dict[tuple[str, str, str], Obj] | None = None):
        self.objects: dict[tuple[str, str, str], Obj] = dict(objects or {})

    def put(self, resource: str, obj: Obj) -> None:
        meta = obj.get("metadata", {})
        self.objects[(resource, meta.get("namespace", ""), meta["name"])] = obj

    async def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        return self.objects.get((resource, namespace, name))

    async def list(self, resource: str, namespace: str | None = None) -> list[Obj]:
        return [o for (r, ns, _), o in sorted(self.objects.items()) if r == resource and namespace in (None, ns)]
