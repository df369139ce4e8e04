"""The ephemeral-volume controller (kube's pkg/controller/volume/ephemeral): a claim for each generic ephemeral volume.

For every Pod volume with `ephemeral.volumeClaimTemplate` the controller creates the PersistentVolumeClaim
`<pod>-<volume>` from the template (its labels, annotations and spec), owned by the Pod (controller and
blockOwnerDeletion set), so the garbage collector removes it with the Pod. A claim of that name the Pod does not own is
left alone and reported with kube's message ("PVC ns/name was not created for the pod"); the Pod's volume then stays
unusable, as in kube.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from lightkube.resources.core_v1 import PersistentVolumeClaim, Pod

from pykubeadm.client import ApiError, is_already_exists
from pykubeadm.controllers.controllerutil import controller_of, new_controller_ref
from pykubeadm.controllers.controllerutil_api import EventRecorder, api_error_message, model
from pykubeadm.controllers.dictview import dict_view
from pykubeadm.controllers.runtime import Controller, PermanentError

__all__ = ["EphemeralVolumeController", "ephemeral_claim"]

Obj = Mapping[str, Any]


def ephemeral_claim(pod: Obj, volume: Obj) -> dict[str, Any]:
    """The claim of one ephemeral volume of `pod`: `<pod>-<volume>`, from the template, owned by the Pod."""
    template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate") or {}
    tmeta = template.get("metadata") or {}
    meta = pod.get("metadata") or {}
    claim_meta: dict[str, Any] = {
        "name": f"{meta.get('name')}-{volume.get('name')}",
        "namespace": meta.get("namespace"),
        "ownerReferences": [new_controller_ref(pod, "v1", "Pod")],
    }
    for key in ("labels", "annotations"):
        if tmeta.get(key):
            claim_meta[key] = dict(tmeta[key])
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": claim_meta,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


class EphemeralVolumeController(Controller):
    name = "ephemeral-volume"
    service_account = "ephemeral-volume-controller"

    def setup(self) -> None:
        self.recorder = EventRecorder(self.client, "ephemeral_volume")
        self.pods = dict_view(self.watch(Pod, self._on_pod, namespace="*"))
        self.claims = dict_view(self.watch(PersistentVolumeClaim, self._on_claim, namespace="*"))

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        if event == "DELETED" or obj.metadata.deletionTimestamp:
            return
        if any(v.ephemeral is not None for v in (obj.spec.volumes or []) if obj.spec):
            self.queue.add(f"{obj.metadata.namespace}/{obj.metadata.name}")

    def _on_claim(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED":
            return
        for ref in obj.metadata.ownerReferences or []:  # re-create a claim deleted under its live Pod
            if ref.kind == "Pod" and ref.controller:
                self.queue.add(f"{obj.metadata.namespace}/{ref.name}")

    async def sync(self, key: Any) -> None:
        pod = self.pods.get(key)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            if not volume.get("ephemeral"):
                continue
            claim = ephemeral_claim(pod, volume)
            existing = self.claims.get(f"{key.split('/', 1)[0]}/{claim['metadata']['name']}")
            if existing is not None:
                if (controller_of(existing) or {}).get("uid") != pod["metadata"].get("uid"):
                    raise PermanentError(f"PVC {claim['metadata']['namespace']}/{claim['metadata']['name']} "
                                         "was not created for the pod")  # fmt: skip
                continue
            try:
                await self.client.create(model(PersistentVolumeClaim, claim))
            except ApiError as err:
                if is_already_exists(err):
                    continue
                self.recorder.event(pod, "Warning", "FailedBinding", f"create PVC {claim['metadata']['name']}: "
                                    f"{api_error_message(err)}", kind="Pod", api_version="v1")  # fmt: skip
                raise
