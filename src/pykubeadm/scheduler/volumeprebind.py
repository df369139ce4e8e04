"""The VolumeBinding plugin's Reserve and PreBind steps: write the chosen Node's volume plan and wait for the binder.

Before a Pod with unbound WaitForFirstConsumer claims is bound, each claim is either pre-bound to the static volume the
plan chose on the Node (the volume's `claimRef` set, as kube's scheduler does through the API) or annotated
`volume.kubernetes.io/selected-node: <node>` so its provisioner makes a volume there; then the scheduler waits (up to
kube's 600 s bind timeout) until the persistent-volume binder has bound every claim, so the kubelet finds them bound.
Volumes chosen by a plan in flight are "assumed": the next Pods' decisions do not count them as free.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Iterable, Mapping
from typing import Any, Final

from lightkube.resources.core_v1 import PersistentVolume, PersistentVolumeClaim
from lightkube.types import PatchType

from pykubeadm import constants as c
from pykubeadm.client import ApiError, is_conflict
from pykubeadm.controllers.controllerutil_api import model
from pykubeadm.controllers.dictview import DictView

__all__ = ["BIND_TIMEOUT", "VolumePreBinder"]

Obj = Mapping[str, Any]
Plan = Iterable[tuple[Obj, Obj | None]]

#: kube-scheduler's VolumeBinding bindTimeoutSeconds
BIND_TIMEOUT: Final = 600.0
_POLL: Final = 0.05


def _key(claim: Obj) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


class VolumePreBinder:
    def __init__(self, client: Any, claims: DictView, timeout: float = BIND_TIMEOUT):
        self.client = client
        self.claims = claims
        self.timeout = timeout
        self._assumed: set[str] = set()

    def is_assumed(self, volume_name: str) -> bool:
        return volume_name in self._assumed

    def assume(self, plan: Plan) -> None:
        self._assumed.update(str(v["metadata"]["name"]) for _, v in plan if v is not None)

    def forget(self, plan: Plan) -> None:
        self._assumed.difference_update(str(v["metadata"]["name"]) for _, v in plan if v is not None)

    async def pre_bind(self, plan: Plan, node: str) -> None:
        """Write the plan, then wait until every claim is bound; an exception says why it could not be."""
        plan = list(plan)
        for claim, volume in plan:
            if volume is not None:
                await self._bind_volume(volume, claim)
            elif ((claim.get("metadata") or {}).get("annotations") or {}).get(c.ANN_SELECTED_NODE) != node:
                meta = claim["metadata"]
                patch = {"metadata": {"annotations": {c.ANN_SELECTED_NODE: node}}}
                await self.client.patch(
                    PersistentVolumeClaim, meta["name"], patch, namespace=meta["namespace"], patch_type=PatchType.MERGE
                )
        deadline = time.monotonic() + self.timeout
        for claim, _ in plan:
            while not self._bound(claim):
                if time.monotonic() > deadline:
                    raise TimeoutError("binding volumes: timed out waiting for the condition")
                await asyncio.sleep(_POLL)

    def _bound(self, claim: Obj) -> bool:
        current = self.claims.get(_key(claim))
        if current is None or current["metadata"].get("uid") != claim["metadata"].get("uid"):
            raise LookupError(f'persistentvolumeclaim "{claim["metadata"]["name"]}" was deleted')
        ann = current["metadata"].get("annotations") or {}
        return bool((current.get("spec") or {}).get("volumeName") and ann.get(c.ANN_BIND_COMPLETED))

    async def _bind_volume(self, volume: Obj, claim: Obj) -> None:
        meta = claim["metadata"]
        for attempt in range(3):
            body = copy.deepcopy(dict(volume))
            body["metadata"].setdefault("annotations", {})[c.ANN_BOUND_BY_CONTROLLER] = "yes"
            body["spec"]["claimRef"] = {
                "kind": "PersistentVolumeClaim",
                "apiVersion": "v1",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            }
            try:
                await self.client.replace(model(PersistentVolume, body))
                return
            except ApiError as err:
                if not is_conflict(err) or attempt == 2:
                    raise
                fresh = (await self.client.get(PersistentVolume, body["metadata"]["name"])).to_dict()
                if (fresh.get("spec") or {}).get("claimRef"):
                    raise
                volume = fresh
