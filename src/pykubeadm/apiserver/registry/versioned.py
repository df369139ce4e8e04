"""The store of a built-in kind's version that is served but not stored (autoscaling/v1 HorizontalPodAutoscaler,
stored at autoscaling/v2): the same keys as the storage version's store, every record converted on the way in and out
by the strategy (`to_storage` / `from_storage`), as kube-apiserver's codec converts through the internal version.

Everything between the two conversions (defaulting, validation, admission, the no-op check, watches, field selectors)
sees the object at the served version, as a client of that version does.
"""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.registry.base import Obj, RequestContext
from pykubeadm.apiserver.registry.store import Admit, Store
from pykubeadm.storage import interface as si

__all__ = ["VersionedStore"]


class VersionedStore(Store):
    def decode(self, kv: si.KeyValue, revision: int | None = None) -> Obj:
        stored = super().decode(kv, revision)
        stored["apiVersion"] = f"{self.strategy.group}/{self.strategy.storage_version}"
        return self.strategy.from_storage(stored)

    def encode(self, obj: Obj) -> bytes:
        return super().encode(self.strategy.to_storage(obj))

    def _as_read(self, obj: Obj) -> Obj:
        """What a read of the object just written answers (the round trip through storage)."""
        rv = obj.get("metadata", {}).get("resourceVersion")
        out = self.strategy.from_storage(self.strategy.to_storage(obj))
        if rv is not None:
            out.setdefault("metadata", {})["resourceVersion"] = rv
        return out

    async def create(self, namespace: str, obj: Obj, ctx: RequestContext, admit: Admit | None = None) -> Obj:
        return self._as_read(await super().create(namespace, obj, ctx, admit))

    async def update(self, *args: Any, **kwargs: Any) -> tuple[Obj, bool]:
        obj, created = await super().update(*args, **kwargs)
        return self._as_read(obj), created
