"""The local-path provisioner's controller: a directory and a hostPath PersistentVolume per claim, on the claim's Node.

Behaves as Rancher's local-path-provisioner (the one kind and k3s ship): a claim handed to it by the binder
(`volume.kubernetes.io/storage-provisioner: rancher.io/local-path`) of a class with this provisioner, once the scheduler
has chosen its Node (`volume.kubernetes.io/selected-node`), gets the directory
`<base>/<pv>_<namespace>_<claim>` (base: `/var/local-path-provisioner` unless config.json says otherwise) and the
PersistentVolume `pvc-<claim uid>`: hostPath `DirectoryOrCreate` to that directory, node affinity
`kubernetes.io/hostname In [<node>]`, the class's reclaim policy and mount options, pre-bound to the claim. A volume it
made that is `Released` with reclaim `Delete` has its directory removed and is deleted.

The directories live on the Nodes, not where the provisioner runs, so each is made and removed by a short helper Pod
pinned to the Node (`spec.nodeName`) that mounts the base directory (hostPath) and runs the configured setup or
teardown script with `VOL_DIR`, `VOL_MODE` and `VOL_SIZE_BYTES` — the upstream design, which works the same with
containerd and with the built-in runtime (where a hostPath is under the Node's root directory). Events are the
provisioning library's: `Provisioning`, `ProvisioningSucceeded`, `ProvisioningFailed`, `VolumeFailedDelete`.
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
import time
from collections.abc import Callable
from typing import Any, Final

from lightkube.resources.core_v1 import Node, PersistentVolume, Pod
from lightkube.resources.storage_v1 import StorageClass

from pykubeadm import constants as c
from pykubeadm.client import ApiError, is_already_exists, is_not_found
from pykubeadm.controllers.controllerutil_api import EventRecorder, api_error_message, model
from pykubeadm.controllers.dictview import dict_view
from pykubeadm.controllers.persistentvolume.base import ClaimsAndVolumes
from pykubeadm.controllers.persistentvolume.matching import claim_class, claim_request
from pykubeadm.controllers.runtime import ControllerContext, TemporaryError
from pykubeadm.localpath.config import ProvisionerConfig

__all__ = ["ANN_SELECTED_NODE_LOCAL", "HELPER_TIMEOUT", "PROVISIONER_NAME", "LocalPathProvisioner", "volume_dir"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
PROVISIONER_NAME: Final = "rancher.io/local-path"
#: the Node a volume was made on, as the upstream provisioner records it on the PersistentVolume
ANN_SELECTED_NODE_LOCAL: Final = "local.path.provisioner/selected-node"
#: how long a helper Pod may take (upstream --helper-pod-timeout)
HELPER_TIMEOUT: Final = 120.0
_SUPPORTED_MODES: Final = {"ReadWriteOnce", "ReadWriteOncePod"}


def volume_dir(base: str, pv_name: str, claim: Obj) -> str:
    meta = claim["metadata"]
    return posixpath.join(base, f"{pv_name}_{meta.get('namespace')}_{meta['name']}")


class LocalPathProvisioner(ClaimsAndVolumes):
    name = "local-path-provisioner"
    workers = 16  # each provisioning waits for its helper Pod: many claims at once

    def __init__(
        self,
        ctx: ControllerContext,
        *,
        namespace: str,
        config: Callable[[], ProvisionerConfig],
        helper_image: str = "busybox",
        service_account: str = "local-path-provisioner-service-account",
        provisioner_name: str = PROVISIONER_NAME,
        helper_timeout: float = HELPER_TIMEOUT,
    ):
        self.namespace = namespace
        self.config = config
        self.helper_image = helper_image
        self.helper_service_account = service_account
        self.provisioner_name = provisioner_name
        self.helper_timeout = helper_timeout
        super().__init__(ctx)

    def setup(self) -> None:
        self.recorder = EventRecorder(self.client, self.provisioner_name)
        self.watch_claims_and_volumes(self._on_claim, self._on_volume)
        self.classes = dict_view(self.watch(StorageClass, lambda *_: None))
        self.helpers = dict_view(self.watch(Pod, lambda *_: None, namespace=self.namespace))

    def _on_claim(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED":
            self.add_claim(obj.metadata.namespace, obj.metadata.name)

    def _on_volume(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED":
            self.add_volume(obj.metadata.name)

    # --- provisioning --------------------------------------------------------------------------------------------------

    def _class_for(self, claim: Obj) -> Obj | None:
        """The claim's class when this provisioner must make its volume now, else None (shouldProvision)."""
        meta, spec = claim["metadata"], claim.get("spec") or {}
        if spec.get("volumeName") or meta.get("deletionTimestamp"):
            return None
        ann = meta.get("annotations") or {}
        wanted = ann.get(c.ANN_STORAGE_PROVISIONER) or ann.get(c.ANN_BETA_STORAGE_PROVISIONER)
        storage_class = self.classes.get(claim_class(claim))
        if wanted != self.provisioner_name or storage_class is None:
            return None
        if storage_class.get("provisioner") != self.provisioner_name:
            return None
        if storage_class.get("volumeBindingMode") == "WaitForFirstConsumer" and not ann.get(c.ANN_SELECTED_NODE):
            return None
        return storage_class

    async def sync_claim(self, claim: Obj) -> None:
        storage_class = self._class_for(claim)
        if storage_class is None:
            return
        meta = claim["metadata"]
        pv_name = f"pvc-{meta['uid']}"
        if self.volumes.get(pv_name) is not None:
            return  # made already; the binder binds it
        class_name = storage_class["metadata"]["name"]
        self._claim_event(
            claim, "Normal", "Provisioning",
            f'External provisioner is provisioning volume for claim "{meta["namespace"]}/{meta["name"]}"',
        )  # fmt: skip
        try:
            volume = await self._provision(claim, storage_class, pv_name)
        except Exception as err:
            message = f'failed to provision volume with StorageClass "{class_name}": {api_error_message(err)}'
            self._claim_event(claim, "Warning", "ProvisioningFailed", message)
            raise TemporaryError(message) from err
        try:
            await self.client.create(model(PersistentVolume, volume))
        except ApiError as err:
            if not is_already_exists(err):
                raise
        self._claim_event(claim, "Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {pv_name}")

    async def _provision(self, claim: Obj, storage_class: Obj, pv_name: str) -> Obj:
        meta, spec = claim["metadata"], claim.get("spec") or {}
        modes = list(spec.get("accessModes") or [])
        if not set(modes) <= _SUPPORTED_MODES:
            raise ValueError("NodePath only supports ReadWriteOnce and ReadWriteOncePod (1.22+) access modes")
        if (spec.get("volumeMode") or "Filesystem") != "Filesystem":
            raise ValueError("only Filesystem volumes are supported")
        node_name = str((meta.get("annotations") or {}).get(c.ANN_SELECTED_NODE) or "")
        if not node_name:
            raise ValueError("configuration error, no node was specified")
        node = (await self.client.get(Node, node_name)).to_dict()
        hostname = ((node.get("metadata") or {}).get("labels") or {}).get("kubernetes.io/hostname") or node_name
        base = self.config().base_path(node_name)
        path = volume_dir(base, pv_name, claim)
        size = int(claim_request(claim))
        await self._run_helper("create", pv_name, node_name, base, path, size)
        term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [hostname]}]}
        pv_spec: Obj = {
            "capacity": {"storage": str(((spec.get("resources") or {}).get("requests") or {}).get("storage", "0"))},
            "accessModes": modes,
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "storageClassName": storage_class["metadata"]["name"],
            "volumeMode": "Filesystem",
            "hostPath": {"path": path, "type": "DirectoryOrCreate"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "apiVersion": "v1",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
                "resourceVersion": meta.get("resourceVersion"),
            },
        }
        if storage_class.get("mountOptions"):
            pv_spec["mountOptions"] = list(storage_class["mountOptions"])
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": pv_name,
                "annotations": {c.ANN_PROVISIONED_BY: self.provisioner_name, ANN_SELECTED_NODE_LOCAL: node_name},
            },
            "spec": pv_spec,
        }

    # --- deleting ------------------------------------------------------------------------------------------------------

    async def sync_volume(self, volume: Obj) -> None:
        meta, spec = volume["metadata"], volume.get("spec") or {}
        if (meta.get("annotations") or {}).get(c.ANN_PROVISIONED_BY) != self.provisioner_name:
            return
        if (volume.get("status") or {}).get("phase") != "Released" or spec.get("persistentVolumeReclaimPolicy") != (
            "Delete"
        ):
            return
        if meta.get("deletionTimestamp"):
            return
        path = str((spec.get("hostPath") or spec.get("local") or {}).get("path") or "")
        node_name = (meta.get("annotations") or {}).get(ANN_SELECTED_NODE_LOCAL) or _affinity_node(volume)
        try:
            if not path or not node_name:
                raise ValueError(f"no path or node for volume {meta['name']}")
            await self._run_helper("delete", meta["name"], node_name, posixpath.dirname(path), path, 0)
            await self.client.delete(PersistentVolume, meta["name"])
        except ApiError as err:
            if is_not_found(err):
                return
            self._volume_event(volume, "Warning", "VolumeFailedDelete", api_error_message(err))
            raise TemporaryError(f"deleting volume {meta['name']}: {err}") from err
        except Exception as err:
            self._volume_event(volume, "Warning", "VolumeFailedDelete", str(err))
            raise TemporaryError(f"deleting volume {meta['name']}: {err}") from err

    # --- helper Pods ---------------------------------------------------------------------------------------------------

    async def _run_helper(self, action: str, pv_name: str, node: str, base: str, path: str, size: int) -> None:
        """Run the setup (`create`) or teardown (`delete`) script on `node` in a helper Pod; raise if it fails."""
        config = self.config()
        name = f"helper-pod-{action}-{pv_name}"[:253]
        script = config.setup if action == "create" else config.teardown
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {
                "nodeName": node,
                "restartPolicy": "Never",
                "priorityClassName": "system-node-critical",
                "serviceAccountName": self.helper_service_account,
                "automountServiceAccountToken": False,
                "tolerations": [{"operator": "Exists"}],
                "containers": [
                    {
                        "name": "helper-pod",
                        "image": self.helper_image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["/bin/sh", "-c", script],
                        "env": [
                            {"name": "VOL_DIR", "value": path},
                            {"name": "VOL_MODE", "value": "Filesystem"},
                            {"name": "VOL_SIZE_BYTES", "value": str(size)},
                        ],
                        "volumeMounts": [{"name": "data", "mountPath": base}],
                    }
                ],
                "volumes": [{"name": "data", "hostPath": {"path": base, "type": "DirectoryOrCreate"}}],
            },
        }
        await self._delete_helper(name)  # a leftover of an earlier attempt
        await self.client.create(model(Pod, pod))
        try:
            deadline = time.monotonic() + self.helper_timeout
            while True:
                current = self.helpers.get(f"{self.namespace}/{name}")
                phase = ((current or {}).get("status") or {}).get("phase")
                if phase == "Succeeded":
                    return
                if phase == "Failed":
                    raise RuntimeError(f"{action} process failed")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{action} process timeout after {self.helper_timeout:g} seconds")
                await asyncio.sleep(0.05)
        finally:
            await self._delete_helper(name)

    async def _delete_helper(self, name: str) -> None:
        try:
            await self.client.delete(Pod, name, namespace=self.namespace, grace_period=0)
        except ApiError as err:
            if not is_not_found(err):
                raise

    def _claim_event(self, claim: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(claim, type_, reason, message, kind="PersistentVolumeClaim", api_version="v1")

    def _volume_event(self, volume: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(volume, type_, reason, message, kind="PersistentVolume", api_version="v1")


def _affinity_node(volume: Obj) -> str:
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") == "kubernetes.io/hostname" and expr.get("values"):
                return str(expr["values"][0])
    return ""
