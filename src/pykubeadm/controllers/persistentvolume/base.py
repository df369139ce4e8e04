"""The base of controllers that reconcile claims and volumes (the binder here, the local-path provisioner).

Queue keys are `claim:<namespace>/<name>` and `volume:<name>`; `sync` looks the object up in the shared informers'
dict views and calls `sync_claim` or `sync_volume` (nothing when it is gone).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lightkube.resources.core_v1 import PersistentVolume, PersistentVolumeClaim

from pykubeadm.controllers.dictview import dict_view
from pykubeadm.controllers.runtime import Controller

__all__ = ["ClaimsAndVolumes"]

Handler = Callable[[str, Any, Any], None]


class ClaimsAndVolumes(Controller):
    def watch_claims_and_volumes(self, on_claim: Handler, on_volume: Handler) -> None:
        self.claims = dict_view(self.watch(PersistentVolumeClaim, on_claim, namespace="*"))
        self.volumes = dict_view(self.watch(PersistentVolume, on_volume))

    def add_claim(self, namespace: str | None, name: str | None) -> None:
        self.queue.add(f"claim:{namespace}/{name}")

    def add_volume(self, name: str | None) -> None:
        self.queue.add(f"volume:{name}")

    async def sync(self, key: Any) -> None:
        kind, _, name = str(key).partition(":")
        if kind == "claim":
            claim = self.claims.get(name)
            if claim is not None:
                await self.sync_claim(claim)
        else:
            volume = self.volumes.get(name)
            if volume is not None:
                await self.sync_volume(volume)

    async def sync_claim(self, claim: dict[str, Any]) -> None:
        raise NotImplementedError

    async def sync_volume(self, volume: dict[str, Any]) -> None:
        raise NotImplementedError
