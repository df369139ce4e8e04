"""The persistentvolume-binder controller (kube's pkg/controller/volume/persistentvolume pv_controller).

Keys are `claim:<ns>/<name>` and `volume:<name>`. A claim not yet bound (no `pv.kubernetes.io/bind-completed`) binds
to its requested `spec.volumeName` or to the best matching volume (matching.py); when none matches it waits for its
first consumer (WaitForFirstConsumer class, no selected node yet), or is handed to the class's provisioner by the
`volume.kubernetes.io/storage-provisioner` annotation (and the beta one) with kube's `ExternalProvisioning` event, or
reports `FailedBinding` when it has no class. Binding writes the volume first (claimRef, `bound-by-controller`, phase
Bound), then the claim (volumeName, `bind-completed`, status Bound with the volume's capacity and access modes). A
bound claim whose volume went away becomes `Lost` (`ClaimLost`); two claims on one volume: `ClaimMisbound`. A
delayed claim used by unscheduled Pods says so (`WaitForPodScheduled`).

A volume without claimRef is `Available`; one whose claim is gone (the cache's answer checked with the API server,
as a provisioner's volume may be seen before its claim) is `Released` and reclaimed: `Retain` keeps it,
`Delete` leaves a dynamically provisioned volume to its external provisioner (which deletes it) and fails others
(`VolumeFailedDelete`: no in-tree deleter here), `Recycle` fails (`VolumeFailedRecycle`). Claims created without a
class get the default StorageClass once one exists (kube's retroactive default class assignment).
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Final

from lightkube.resources.core_v1 import (
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimStatus,
    PersistentVolumeStatus,
    Pod,
)
from lightkube.resources.storage_v1 import StorageClass

from pykubeadm import constants as c
from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil_api import EventRecorder, model
from pykubeadm.controllers.dictview import dict_view
from pykubeadm.controllers.persistentvolume.base import ClaimsAndVolumes
from pykubeadm.controllers.persistentvolume.matching import (
    claim_class,
    find_matching_volume,
    is_volume_bound_to_claim,
    pod_claims,
    volume_mismatch,
)
from pykubeadm.controllers.runtime import TemporaryError
from pykubeadm.util.apitime import now_time
from pykubeadm.util.storageclass import default_class

__all__ = ["PersistentVolumeController", "external_provisioning_message"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
COMPONENT: Final = "persistentvolume-controller"
_YES: Final = "yes"
_RELEASED: Final = frozenset({"Released", "Failed"})


def external_provisioning_message(provisioner: str) -> str:
    return (
        f"Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the "
        "system administrator. If volume creation is delayed, please verify that the provisioner is running and "
        "correctly registered."
    )


def _ann(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def _claim_key(claim: Obj) -> str:
    return f"{claim['metadata'].get('namespace')}/{claim['metadata']['name']}"


class PersistentVolumeController(ClaimsAndVolumes):
    name = "persistentvolume-binder"
    service_account = "persistent-volume-binder"
    workers = 1  # kube's binder syncs one claim and one volume at a time: no two claims race for a volume

    def setup(self) -> None:
        self.recorder = EventRecorder(self.client, COMPONENT)
        self.watch_claims_and_volumes(self._on_claim, self._on_volume)
        self.classes = dict_view(self.watch(StorageClass, self._on_class))
        self.pods = dict_view(self.watch(Pod, lambda *_: None, namespace="*"))

    # --- event handlers ----------------------------------------------------------------------------------------------

    def _on_claim(self, event: str, obj: Any, old: Any) -> None:
        claim = obj.to_dict()
        if event == "DELETED":
            volume = (claim.get("spec") or {}).get("volumeName")
            if volume:
                self.add_volume(volume)
            return
        self.add_claim(claim["metadata"].get("namespace"), claim["metadata"]["name"])

    def _on_volume(self, event: str, obj: Any, old: Any) -> None:
        name = obj.metadata.name
        if event != "DELETED":
            self.add_volume(name)
        ref = obj.spec.claimRef if obj.spec else None
        if ref is not None and ref.name:
            self.add_claim(ref.namespace, ref.name)
        for claim in self.claims.items():  # claims that asked for this volume by name
            if (claim.get("spec") or {}).get("volumeName") == name and not _ann(claim).get(c.ANN_BIND_COMPLETED):
                self.add_claim(claim["metadata"].get("namespace"), claim["metadata"]["name"])

    def _on_class(self, event: str, obj: Any, old: Any) -> None:
        for claim in self.claims.items():
            if (claim.get("status") or {}).get("phase") in (None, "Pending"):
                self.add_claim(claim["metadata"].get("namespace"), claim["metadata"]["name"])

    # --- sync --------------------------------------------------------------------------------------------------------

    def _storage_class(self, name: str) -> Obj | None:
        return self.classes.get(name) if name else None

    async def sync_claim(self, claim: Obj) -> None:
        spec = claim.get("spec") or {}
        if (
            spec.get("storageClassName") is None
            and "volume.beta.kubernetes.io/storage-class" not in _ann(claim)
            and not spec.get("volumeName")
        ):
            found = default_class(self.classes.items())
            if found is not None:  # retroactive default StorageClass assignment (kube ≥ 1.28)
                body = copy.deepcopy(claim)
                body["spec"]["storageClassName"] = found["metadata"]["name"]
                await self._write_claim(body)
                return
        if _ann(claim).get(c.ANN_BIND_COMPLETED):
            await self._sync_bound_claim(claim)
        else:
            await self._sync_unbound_claim(claim)

    async def _sync_unbound_claim(self, claim: Obj) -> None:
        spec = claim.get("spec") or {}
        wanted = spec.get("volumeName")
        if not wanted:
            class_name = claim_class(claim)
            storage_class = self._storage_class(class_name)
            delay = (
                storage_class is not None
                and storage_class.get("volumeBindingMode") == "WaitForFirstConsumer"
                and not _ann(claim).get(c.ANN_SELECTED_NODE)
            )
            volume = find_matching_volume(claim, self.volumes.items(), delay_binding=delay)
            if volume is not None:
                await self._bind(dict(volume), claim)
                return
            if delay:
                self._wait_for_consumer_event(claim)
            elif not class_name:
                self._event(
                    claim,
                    "Normal",
                    "FailedBinding",
                    "no persistent volumes available for this claim and no storage class is set",
                )
            else:
                claim = await self._provision(claim, class_name, storage_class)
            await self._set_claim_phase(claim, "Pending")
            return
        volume = self.volumes.get(wanted)
        if volume is None:
            log.debug("claim %s: volume %s requested and not found, will try again", _claim_key(claim), wanted)
            await self._set_claim_phase(claim, "Pending")
            return
        if not (volume.get("spec") or {}).get("claimRef"):
            problem = volume_mismatch(volume, claim)
            if problem is not None:
                self._event(
                    claim, "Warning", "VolumeMismatch", f'Cannot bind to requested volume "{wanted}": {problem}'
                )
                await self._set_claim_phase(claim, "Pending")
                return
            await self._bind(volume, claim)
        elif is_volume_bound_to_claim(volume, claim):
            await self._bind(volume, claim)
        else:
            self._event(claim, "Warning", "FailedBinding", f'volume "{wanted}" already bound to a different claim.')
            await self._set_claim_phase(claim, "Pending")

    async def _provision(self, claim: Obj, class_name: str, storage_class: Obj | None) -> Obj:
        """Hand the claim to its class's (external) provisioner: the annotations and kube's event."""
        if storage_class is None:
            self._event(claim, "Warning", "ProvisioningFailed", f'storageclass.storage.k8s.io "{class_name}" not found')
            return claim
        provisioner = str(storage_class.get("provisioner") or "")
        ann = _ann(claim)
        if ann.get(c.ANN_STORAGE_PROVISIONER) != provisioner or ann.get(c.ANN_BETA_STORAGE_PROVISIONER) != provisioner:
            body = copy.deepcopy(claim)
            body["metadata"]["annotations"] = {
                **ann,
                c.ANN_STORAGE_PROVISIONER: provisioner,
                c.ANN_BETA_STORAGE_PROVISIONER: provisioner,
            }
            claim = await self._write_claim(body)
        self._event(claim, "Normal", "ExternalProvisioning", external_provisioning_message(provisioner))
        return claim

    async def _sync_bound_claim(self, claim: Obj) -> None:
        wanted = (claim.get("spec") or {}).get("volumeName")
        if not wanted:
            await self._claim_lost(
                claim, "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
            )
            return
        volume = self.volumes.get(wanted)
        if volume is None:
            await self._claim_lost(claim, "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
            return
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref or is_volume_bound_to_claim(volume, claim):
            await self._bind(volume, claim)
            return
        self._event(
            claim, "Warning", "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly"
        )
        await self._set_claim_phase(claim, "Lost")

    async def _claim_lost(self, claim: Obj, message: str) -> None:
        if (claim.get("status") or {}).get("phase") != "Lost":
            self._event(claim, "Warning", "ClaimLost", message)
        await self._set_claim_phase(claim, "Lost")

    async def _bind(self, volume: Obj, claim: Obj) -> None:
        """bind(): the volume to the claim (claimRef, phase Bound), then the claim to the volume (status Bound)."""
        meta = claim["metadata"]
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if (
            ref.get("uid") != meta.get("uid")
            or ref.get("name") != meta["name"]
            or ref.get("namespace") != meta.get("namespace")
        ):
            body = copy.deepcopy(volume)
            if not is_volume_bound_to_claim(volume, claim):
                body["metadata"].setdefault("annotations", {})
                body["metadata"]["annotations"].setdefault(c.ANN_BOUND_BY_CONTROLLER, _YES)
            body["spec"]["claimRef"] = {
                "kind": "PersistentVolumeClaim",
                "namespace": meta.get("namespace"),
                "name": meta["name"],
                "uid": meta.get("uid"),
                "apiVersion": "v1",
                "resourceVersion": meta.get("resourceVersion"),
            }
            volume = await self._write_volume(body)
        volume = await self._set_volume_phase(volume, "Bound")
        vname = volume["metadata"]["name"]
        ann = _ann(claim)
        if (claim.get("spec") or {}).get("volumeName") != vname or ann.get(c.ANN_BIND_COMPLETED) != _YES:
            body = copy.deepcopy(claim)
            annotations = body["metadata"].setdefault("annotations", {})
            if (claim.get("spec") or {}).get("volumeName") != vname:
                annotations.setdefault(c.ANN_BOUND_BY_CONTROLLER, _YES)
            annotations[c.ANN_BIND_COMPLETED] = _YES
            body["spec"]["volumeName"] = vname
            claim = await self._write_claim(body)
        vspec = volume.get("spec") or {}
        status = dict(claim.get("status") or {})
        want = {
            "phase": "Bound",
            "accessModes": list(vspec.get("accessModes") or []),
            "capacity": dict(vspec.get("capacity") or {}),
        }
        if any(status.get(k) != v for k, v in want.items()):
            body = copy.deepcopy(claim)
            body["status"] = {**status, **want}
            await self._write_claim_status(body)

    # --- volumes -----------------------------------------------------------------------------------------------------

    async def sync_volume(self, volume: Obj) -> None:
        spec = volume.get("spec") or {}
        ref = spec.get("claimRef")
        if not ref or not ref.get("uid"):
            await self._set_volume_phase(volume, "Available")
            return
        claim = self.claims.get(f"{ref.get('namespace')}/{ref.get('name')}")
        if claim is None and (volume.get("status") or {}).get("phase") not in _RELEASED:
            claim = await self._live_claim(ref)  # a provisioner's volume may be seen before its claim: ask the API
        if claim is not None and claim["metadata"].get("uid") != ref.get("uid"):
            claim = None
        if claim is None:
            volume = await self._set_volume_phase(volume, "Released", keep=_RELEASED)
            await self._reclaim(volume)
            return
        bound_to = (claim.get("spec") or {}).get("volumeName")
        if not bound_to:
            self.add_claim(
                claim["metadata"].get("namespace"), claim["metadata"]["name"]
            )  # the claim's sync finishes (or re-makes) the binding
        elif bound_to == volume["metadata"]["name"]:
            await self._set_volume_phase(volume, "Bound")
        elif _ann(volume).get(c.ANN_PROVISIONED_BY) and spec.get("persistentVolumeReclaimPolicy") == "Delete":
            volume = await self._set_volume_phase(volume, "Released", keep=_RELEASED)
            await self._reclaim(volume)  # provisioned for a claim that got bound elsewhere: not needed
        else:
            await self._unbind(volume)

    async def _live_claim(self, ref: Obj) -> Obj | None:
        try:
            found = await self.client.get(
                PersistentVolumeClaim, str(ref.get("name") or ""), namespace=ref.get("namespace")
            )
        except ApiError as err:
            if is_not_found(err):
                return None
            raise TemporaryError(f"getting claim {ref.get('namespace')}/{ref.get('name')}: {err}") from err
        return dict(found.to_dict())

    def _wait_for_consumer_event(self, claim: Obj) -> None:
        """emitEventForUnboundDelayBindingClaim: WaitForFirstConsumer, or WaitForPodScheduled naming the Pods that
        use the claim and are not scheduled yet."""
        meta = claim["metadata"]
        waiting = sorted(
            p["metadata"]["name"]
            for p in self.pods.items(meta.get("namespace"))
            if not (p.get("spec") or {}).get("nodeName")
            and not p["metadata"].get("deletionTimestamp")
            and meta["name"] in [name for name, _ in pod_claims(p)]
        )
        if not waiting:
            self._event(
                claim, "Normal", "WaitForFirstConsumer", "waiting for first consumer to be created before binding"
            )
        elif len(waiting) == 1:
            self._event(claim, "Normal", "WaitForPodScheduled", f"waiting for pod {waiting[0]} to be scheduled")
        else:
            self._event(claim, "Normal", "WaitForPodScheduled", f"waiting for pods {','.join(waiting)} to be scheduled")

    async def _unbind(self, volume: Obj) -> None:
        body = copy.deepcopy(volume)
        if _ann(volume).get(c.ANN_BOUND_BY_CONTROLLER):
            body["spec"].pop("claimRef", None)
            body["metadata"]["annotations"].pop(c.ANN_BOUND_BY_CONTROLLER, None)
        else:
            body["spec"]["claimRef"].pop("uid", None)  # pre-bound by a user: keep the claim's name
        volume = await self._write_volume(body)
        await self._set_volume_phase(volume, "Available")

    async def _reclaim(self, volume: Obj) -> None:
        policy = (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain"
        name = volume["metadata"]["name"]
        if policy == "Retain" or (volume.get("status") or {}).get("phase") == "Failed":
            return
        if policy == "Delete":
            if _ann(volume).get(c.ANN_PROVISIONED_BY):
                return  # the external provisioner that made it deletes it
            message = f'error getting deleter volume plugin for volume "{name}": no deletable volume plugin matched'
            self._volume_event(volume, "Warning", "VolumeFailedDelete", message)
            await self._set_volume_phase(volume, "Failed", message=message)
            return
        message = "No recycler plugin found for the volume!"
        self._volume_event(volume, "Warning", "VolumeFailedRecycle", message)
        await self._set_volume_phase(volume, "Failed", message=message)

    # --- writes ------------------------------------------------------------------------------------------------------

    def _event(self, claim: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(claim, type_, reason, message, kind="PersistentVolumeClaim", api_version="v1")

    def _volume_event(self, volume: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(volume, type_, reason, message, kind="PersistentVolume", api_version="v1")

    async def _set_claim_phase(self, claim: Obj, phase: str) -> None:
        if (claim.get("status") or {}).get("phase") == phase:
            return
        body = copy.deepcopy(claim)
        body["status"] = {**(claim.get("status") or {}), "phase": phase}
        await self._write_claim_status(body)

    async def _set_volume_phase(
        self, volume: Obj, phase: str, *, keep: frozenset[str] = frozenset(), message: str = ""
    ) -> Obj:
        status = volume.get("status") or {}
        if status.get("phase") == phase or status.get("phase") in keep:
            return volume
        body = copy.deepcopy(volume)
        body["status"] = {"phase": phase, "lastPhaseTransitionTime": now_time()}
        if message:
            body["status"]["message"] = message
        return await self._write(
            lambda: self.client.replace(model(PersistentVolumeStatus, body), volume["metadata"]["name"]),
            f"status of volume {volume['metadata']['name']}",
        )

    async def _write_volume(self, body: Obj) -> Obj:
        return await self._write(
            lambda: self.client.replace(model(PersistentVolume, body)), f"volume {body['metadata']['name']}"
        )

    async def _write_claim(self, body: Obj) -> Obj:
        return await self._write(
            lambda: self.client.replace(model(PersistentVolumeClaim, body)), f"claim {_claim_key(body)}"
        )

    async def _write_claim_status(self, body: Obj) -> Obj:
        meta = body["metadata"]
        return await self._write(
            lambda: self.client.replace(
                model(PersistentVolumeClaimStatus, body), meta["name"], namespace=meta.get("namespace")
            ),
            f"status of claim {_claim_key(body)}",
        )

    async def _write(self, call: Any, what: str) -> Obj:
        try:
            result = await call()
        except ApiError as err:
            if is_conflict(err) or is_not_found(err):
                raise TemporaryError(f"updating {what}: {err}", delay=0.05) from err
            raise TemporaryError(f"updating {what}: {err}") from err
        return dict(result.to_dict())
