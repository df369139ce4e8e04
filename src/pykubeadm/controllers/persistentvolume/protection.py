"""The pvc-protection and pv-protection controllers: finalizers that keep storage objects while they are in use.

As kube's pkg/controller/volume/pvcprotection and pvprotection: each keeps its finalizer (`kubernetes.io/pvc-protection`
on claims, `kubernetes.io/pv-protection` on volumes) on every live object, and removes it from an object being deleted
once nothing uses it: a claim is in use while a Pod that is not finished (Succeeded/Failed) names it in a
`persistentVolumeClaim` volume or owns it as a generic ephemeral volume (`<pod>-<volume>`); a volume while it is Bound.
Before releasing a claim the cache's answer is checked against a live list of the namespace's Pods, as kube does.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from lightkube.resources.core_v1 import PersistentVolume, PersistentVolumeClaim, Pod

from pykubeadm import constants as c
from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil import is_pod_terminal
from pykubeadm.controllers.controllerutil_api import model
from pykubeadm.controllers.dictview import dict_view
from pykubeadm.controllers.persistentvolume.matching import pod_claims
from pykubeadm.controllers.runtime import Controller, TemporaryError

__all__ = ["PVCProtectionController", "PVProtectionController"]

Obj = Mapping[str, Any]


def _uses(pods: Iterable[Obj], claim_name: str) -> bool:
    return any(not is_pod_terminal(p) and claim_name in [n for n, _ in pod_claims(p)] for p in pods)


async def _set_finalizer(client: Any, res: type, obj: Obj, finalizer: str, present: bool) -> None:
    body = copy.deepcopy(dict(obj))
    finalizers = [f for f in body["metadata"].get("finalizers") or [] if f != finalizer]
    if present:
        finalizers.append(finalizer)
    body["metadata"]["finalizers"] = finalizers
    try:
        await client.replace(model(res, body))
    except ApiError as err:
        if is_not_found(err):
            return
        raise TemporaryError(f"updating the finalizers of {body['metadata']['name']}: {err}",
                             delay=0.05 if is_conflict(err) else None) from err  # fmt: skip


class PVCProtectionController(Controller):
    name = "pvc-protection"
    service_account = "pvc-protection-controller"

    def setup(self) -> None:
        self.claims = dict_view(self.watch(PersistentVolumeClaim, self._on_claim, namespace="*"))
        self.pods = dict_view(self.watch(Pod, self._on_pod, namespace="*"))

    def _on_claim(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED":
            self.queue.add(f"{obj.metadata.namespace}/{obj.metadata.name}")

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        pod = obj.to_dict()
        if event == "DELETED" or is_pod_terminal(pod) or pod["metadata"].get("deletionTimestamp"):
            for name, _ in pod_claims(pod):
                self.queue.add(f"{pod['metadata']['namespace']}/{name}")

    async def sync(self, key: Any) -> None:
        claim = self.claims.get(key)
        if claim is None:
            return
        meta = claim["metadata"]
        has = c.PVC_PROTECTION_FINALIZER in (meta.get("finalizers") or [])
        if not meta.get("deletionTimestamp"):
            if not has:
                await _set_finalizer(self.client, PersistentVolumeClaim, claim, c.PVC_PROTECTION_FINALIZER, True)
            return
        if not has:
            return
        namespace, name = meta.get("namespace", ""), meta["name"]
        if _uses(self.pods.items(namespace), name):
            return  # a Pod's update or deletion queues the claim again
        live = [p.to_dict() async for p in self.client.list(Pod, namespace=namespace)]
        if _uses(live, name):
            return
        await _set_finalizer(self.client, PersistentVolumeClaim, claim, c.PVC_PROTECTION_FINALIZER, False)


class PVProtectionController(Controller):
    name = "pv-protection"
    service_account = "pv-protection-controller"

    def setup(self) -> None:
        self.volumes = dict_view(self.watch(PersistentVolume, self._on_volume))

    def _on_volume(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED":
            self.queue.add(obj.metadata.name)

    async def sync(self, key: Any) -> None:
        volume = self.volumes.get(key)
        if volume is None:
            return
        meta = volume["metadata"]
        has = c.PV_PROTECTION_FINALIZER in (meta.get("finalizers") or [])
        if not meta.get("deletionTimestamp"):
            if not has:
                await _set_finalizer(self.client, PersistentVolume, volume, c.PV_PROTECTION_FINALIZER, True)
        elif has and (volume.get("status") or {}).get("phase") != "Bound":
            await _set_finalizer(self.client, PersistentVolume, volume, c.PV_PROTECTION_FINALIZER, False)
