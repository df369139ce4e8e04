"""The deployment controller (kube-controller-manager `deployment`): roll Deployments out through ReplicaSets.

Per sync, as kube's DeploymentController: claim the namespace's ReplicaSets by selector; a paused Deployment or a
change of `replicas` only scales (proportionally across active ReplicaSets while a rollout is under way); otherwise the
strategy runs — RollingUpdate (scale the new ReplicaSet up within maxSurge, the old ones down within maxUnavailable,
unhealthy old Pods first) or Recreate (old ReplicaSets to 0, wait for their Pods to end, then the new one up). The new
ReplicaSet is `<deployment>-<pod-template-hash>`; revisions, revision history, desired/max replicas annotations, the
Progressing and Available conditions and the status are kube's, so `kubectl rollout status|history|undo|pause|resume|
restart` and `kubectl scale` behave as on a real cluster. The pure parts: util.py (scaling math,
annotations) and status.py (status and conditions).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from lightkube.resources.apps_v1 import Deployment, DeploymentStatus, ReplicaSet
from lightkube.resources.core_v1 import Pod

from pykubeadm.client import ApiError, is_already_exists, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil import (
    POD_TEMPLATE_HASH_LABEL,
    compute_hash,
    controller_of,
    new_controller_ref,
    selector_matches,
)
from pykubeadm.controllers.controllerutil_api import EventRecorder, api_error_message, claim, model
from pykubeadm.controllers.deployment import status as dst
from pykubeadm.controllers.deployment import util as du
from pykubeadm.controllers.runtime import Controller, TemporaryError

__all__ = ["DeploymentController"]

log = logging.getLogger(__name__)

KIND: Final = "Deployment"
API_VERSION: Final = "apps/v1"

Obj = dict[str, Any]


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


class DeploymentController(Controller):
    name = "deployment"
    service_account = "deployment-controller"
    workers = 5  # --concurrent-deployment-syncs

    def setup(self) -> None:
        self.recorder = EventRecorder(self.client, "deployment-controller")
        self.deployments = self.watch(Deployment, self._on_deployment, namespace="*")
        self.rss = self.watch(ReplicaSet, self._on_rs, namespace="*")
        self.pods = self.watch(Pod, self._on_pod, namespace="*")

    # --- event handlers ----------------------------------------------------------------------------------------------

    def _on_deployment(self, event: str, obj: Any, old: Any) -> None:
        self.queue.add(f"{obj.metadata.namespace}/{obj.metadata.name}")

    def _resolve(self, namespace: str, ref: dict[str, Any] | None) -> str | None:
        if ref is None or ref.get("kind") != KIND:
            return None
        key = f"{namespace}/{ref.get('name')}"
        d = self.deployments.get(key)
        return key if d is not None and d.metadata.uid == ref.get("uid") else None

    def _matching(self, rs: Obj) -> list[str]:
        meta = rs["metadata"]
        keys = []
        for d in self.deployments.items():
            if d.metadata.namespace != meta.get("namespace") or not (d.spec and d.spec.selector):
                continue
            selector = d.spec.selector.to_dict()
            if (selector.get("matchLabels") or selector.get("matchExpressions")) and selector_matches(
                selector, meta.get("labels")
            ):
                keys.append(f"{d.metadata.namespace}/{d.metadata.name}")
        return keys

    def _on_rs(self, event: str, obj: Any, old: Any) -> None:
        rs = obj.to_dict()
        namespace = rs["metadata"].get("namespace")
        ref = controller_of(rs)
        if event == "MODIFIED" and old is not None:
            old_rs = old.to_dict()
            if old_rs["metadata"].get("resourceVersion") == rs["metadata"].get("resourceVersion"):
                return
            old_ref = controller_of(old_rs)
            if old_ref != ref and old_ref is not None:
                key = self._resolve(namespace, old_ref)
                if key:
                    self.queue.add(key)
            if ref is None and (old_ref != ref or old_rs["metadata"].get("labels") != rs["metadata"].get("labels")):
                for key in self._matching(rs):
                    self.queue.add(key)
                return
        key = self._resolve(namespace, ref)
        if key is not None:
            self.queue.add(key)
        elif ref is None and event == "ADDED":
            for key in self._matching(rs):
                self.queue.add(key)

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED":
            return
        ref = controller_of(obj.to_dict())
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.rss.get(f"{obj.metadata.namespace}/{ref.get('name')}")
        if rs is None:
            return
        key = self._resolve(obj.metadata.namespace, controller_of(rs.to_dict()))
        d = self.deployments.get(key) if key else None
        if d is not None and d.spec and d.spec.strategy and d.spec.strategy.type == "Recreate":
            self.queue.add(key)

    # --- writes ------------------------------------------------------------------------------------------------------

    def _event(self, d: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(d, type_, reason, message, kind=KIND, api_version=API_VERSION)

    async def _write_status(self, d: Obj) -> None:
        meta = d["metadata"]
        try:
            fresh = await self.client.replace(model(DeploymentStatus, d), meta["name"], namespace=meta["namespace"])
        except ApiError as err:
            if is_conflict(err) or is_not_found(err):
                raise TemporaryError(f"updating status of deployment {meta['name']}: {err}") from err
            raise
        assert fresh.metadata is not None  # the apiserver returns the whole object
        meta["resourceVersion"] = fresh.metadata.resourceVersion

    async def _set_progressing(self, d: Obj, status: str, reason: str, message: str) -> None:
        d["status"].setdefault("conditions", [])
        dst.set_condition(d["status"], dst.new_condition("Progressing", status, reason, message, datetime.now(UTC)))
        await self._write_status(d)

    async def _set_revision(self, d: Obj, revision: str) -> None:
        """SetDeploymentRevision (kube writes it with the status; our status subresource keeps metadata)."""
        annotations = d["metadata"].setdefault("annotations", {})
        if annotations.get(du.REVISION_ANNOTATION) == revision:
            return
        body = copy.deepcopy(d)
        body["metadata"]["annotations"][du.REVISION_ANNOTATION] = revision
        try:
            fresh = (await self.client.replace(model(Deployment, body))).to_dict()
        except ApiError as err:
            if is_conflict(err) or is_not_found(err):
                raise TemporaryError(f"updating revision of deployment {_name(d)}: {err}") from err
            raise
        annotations[du.REVISION_ANNOTATION] = revision
        d["metadata"]["resourceVersion"] = fresh["metadata"]["resourceVersion"]

    async def _update_rs(self, rs: Obj, changed: Obj) -> None:
        """PUT `changed` and make `rs` (shared by the caller's lists) the stored object."""
        try:
            fresh = (await self.client.replace(model(ReplicaSet, changed))).to_dict()
        except ApiError as err:
            if is_conflict(err) or is_not_found(err):
                raise TemporaryError(f"updating replica set {_name(rs)}: {err}") from err
            raise
        rs.clear()
        rs.update(fresh)

    async def _scale_rs(self, rs: Obj, new_scale: int, d: Obj, operation: str) -> bool:
        size_changes = du.replicas(rs) != new_scale
        desired, max_replicas = du.replicas(d), du.replicas(d) + du.max_surge(d)
        if not size_changes and not du.replicas_annotations_need_update(rs, desired, max_replicas):
            return False
        old_scale = du.replicas(rs)
        changed = copy.deepcopy(rs)
        changed["spec"]["replicas"] = new_scale
        du.set_replicas_annotations(changed, desired, max_replicas)
        await self._update_rs(rs, changed)
        if size_changes:
            self._event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {operation} replica set {_name(rs)} to {new_scale} from {old_scale}",
            )
        return size_changes

    async def _scale_and_record(self, rs: Obj, new_scale: int, d: Obj) -> bool:
        if du.replicas(rs) == new_scale:
            return False
        return await self._scale_rs(rs, new_scale, d, "up" if du.replicas(rs) < new_scale else "down")

    # --- sync ----------------------------------------------------------------------------------------------------------

    async def sync(self, key: Any) -> None:
        obj = self.deployments.get(key)
        if obj is None:
            return
        d = obj.to_dict()
        spec = d.get("spec") or {}
        d.setdefault("status", {})
        selector = spec.get("selector") or {}
        if not (selector.get("matchLabels") or selector.get("matchExpressions")):
            self._event(
                d, "Warning", "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required."
            )
            if int(d["status"].get("observedGeneration") or 0) < int(d["metadata"].get("generation") or 0):
                d["status"]["observedGeneration"] = d["metadata"].get("generation")
                await self._write_status(d)
            return
        rs_list = await self._claim_rss(d)
        if d["metadata"].get("deletionTimestamp"):
            new_rs, old_rss = await self._get_all_rss(d, rs_list, create=False)
            await self._sync_status(d, [*old_rss, new_rs], new_rs)
            return
        await self._check_paused_conditions(d)
        if spec.get("paused") or self._is_scaling_event(d, rs_list):
            await self._sync_scale(d, rs_list)
        elif (spec.get("strategy") or {}).get("type") == "Recreate":
            await self._rollout_recreate(d, rs_list)
        else:
            await self._rollout_rolling(d, rs_list)

    async def _claim_rss(self, d: Obj) -> list[Obj]:
        meta = d["metadata"]
        rss = [rs.to_dict() for rs in self.rss.items() if rs.metadata.namespace == meta["namespace"]]

        async def still_there() -> bool:
            try:
                fresh = await self.client.get(Deployment, meta["name"], namespace=meta["namespace"])
            except ApiError:
                return False
            fmeta = fresh.metadata
            return bool(fmeta is not None and fmeta.uid == meta.get("uid") and not fmeta.deletionTimestamp)

        ref = new_controller_ref(d, API_VERSION, KIND)
        return await claim(self.client, ReplicaSet, d, ref, d["spec"].get("selector"), rss, still_there)

    def _is_scaling_event(self, d: Obj, rs_list: list[Obj]) -> bool:
        new_rs = du.find_new_rs(d, rs_list)
        for rs in du.filter_active([*rs_list, new_rs]):
            desired = ((rs.get("metadata") or {}).get("annotations") or {}).get(du.DESIRED_REPLICAS_ANNOTATION)
            if desired is not None and desired != str(du.replicas(d)):
                return True
        return False

    async def _check_paused_conditions(self, d: Obj) -> None:
        if not dst.has_progress_deadline(d):
            return
        cond = dst.get_condition(d["status"], "Progressing")
        if cond is not None and cond.get("reason") == dst.TIMED_OUT_REASON:
            return
        paused_cond = cond is not None and cond.get("reason") == dst.PAUSED_REASON
        if d["spec"].get("paused") and not paused_cond:
            await self._set_progressing(d, "Unknown", dst.PAUSED_REASON, "Deployment is paused")
        elif not d["spec"].get("paused") and paused_cond:
            await self._set_progressing(d, "Unknown", dst.RESUMED_REASON, "Deployment is resumed")

    async def _get_all_rss(self, d: Obj, rs_list: list[Obj], create: bool) -> tuple[Obj | None, list[Obj]]:
        existing = du.find_new_rs(d, rs_list)
        old_rss = [rs for rs in rs_list if rs is not existing]
        new_revision = max((du.revision(rs) for rs in old_rss), default=0) + 1
        new_rs = await self._get_new_rs(d, existing, old_rss, new_revision, create)
        return new_rs, old_rss

    async def _get_new_rs(
        self, d: Obj, existing: Obj | None, old_rss: list[Obj], new_revision: int, create: bool
    ) -> Obj | None:
        if existing is not None:
            changed = copy.deepcopy(existing)
            annotations_changed = du.set_new_rs_annotations(d, changed, new_revision, True)
            min_ready = d["spec"].get("minReadySeconds") or 0
            if annotations_changed or (changed["spec"].get("minReadySeconds") or 0) != min_ready:
                changed["spec"]["minReadySeconds"] = min_ready
                await self._update_rs(existing, changed)
            await self._set_revision(
                d, ((existing["metadata"].get("annotations") or {}).get(du.REVISION_ANNOTATION, ""))
            )
            if dst.has_progress_deadline(d) and dst.get_condition(d["status"], "Progressing") is None:
                await self._set_progressing(
                    d, "True", dst.FOUND_NEW_RS_REASON, f'Found new replica set "{_name(existing)}"'
                )
            return existing
        if not create:
            return None
        meta, spec = d["metadata"], d["spec"]
        template = copy.deepcopy(spec.get("template") or {})
        pod_hash = compute_hash(spec.get("template") or {}, d["status"].get("collisionCount"))
        template.setdefault("metadata", {}).setdefault("labels", {})[POD_TEMPLATE_HASH_LABEL] = pod_hash
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[POD_TEMPLATE_HASH_LABEL] = pod_hash
        rs: Obj = {
            "apiVersion": API_VERSION,
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{meta['name']}-{pod_hash}",
                "namespace": meta["namespace"],
                "ownerReferences": [new_controller_ref(d, API_VERSION, KIND)],
                "labels": dict(template["metadata"]["labels"]),
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": spec.get("minReadySeconds") or 0,
                "selector": selector,
                "template": template,
            },
        }
        count = du.new_rs_new_replicas(d, [*old_rss, rs], rs)
        rs["spec"]["replicas"] = count
        du.set_new_rs_annotations(d, rs, new_revision, False)
        already_exists = False
        try:
            created = (await self.client.create(model(ReplicaSet, rs))).to_dict()
        except ApiError as err:
            if not is_already_exists(err):
                msg = f'Failed to create new replica set "{rs["metadata"]["name"]}": {api_error_message(err)}'
                if dst.has_progress_deadline(d):
                    await self._set_progressing(d, "False", dst.FAILED_RS_CREATE_REASON, msg)
                self._event(d, "Warning", dst.FAILED_RS_CREATE_REASON, msg)
                raise
            found = (await self.client.get(ReplicaSet, rs["metadata"]["name"], namespace=meta["namespace"])).to_dict()
            ref = controller_of(found)
            if (
                ref
                and ref.get("uid") == meta.get("uid")
                and du.equal_ignore_hash((found.get("spec") or {}).get("template") or {}, spec.get("template") or {})
            ):
                created, already_exists = found, True
            else:
                d["status"]["collisionCount"] = int(d["status"].get("collisionCount") or 0) + 1
                await self._write_status(d)
                raise TemporaryError(f"hash collision for the new replica set of deployment {meta['name']}") from err
        if not already_exists and count > 0:
            self._event(d, "Normal", "ScalingReplicaSet", f"Scaled up replica set {_name(created)} to {count}")
        await self._set_revision(d, str(new_revision))
        if not already_exists and dst.has_progress_deadline(d):
            await self._set_progressing(
                d, "True", dst.NEW_RS_CREATED_REASON, f'Created new replica set "{_name(created)}"'
            )
        return created

    # --- strategies ----------------------------------------------------------------------------------------------------

    async def _sync_scale(self, d: Obj, rs_list: list[Obj]) -> None:
        """sync(): scale (paused Deployments and replica changes) and report status."""
        new_rs, old_rss = await self._get_all_rss(d, rs_list, create=False)
        await self._scale(d, new_rs, old_rss)
        if d["spec"].get("paused"):
            await self._cleanup(d, old_rss)
        await self._sync_status(d, [*old_rss, new_rs], new_rs)

    async def _scale(self, d: Obj, new_rs: Obj | None, old_rss: list[Obj]) -> None:
        target = du.find_active_or_latest(new_rs, old_rss)
        if target is not None:
            if du.replicas(target) != du.replicas(d):
                await self._scale_and_record(target, du.replicas(d), d)
            return
        if du.is_saturated(d, new_rs):
            for rs in du.filter_active(old_rss):
                await self._scale_and_record(rs, 0, d)
            return
        if du.is_rolling_update(d):
            sizes, operation = du.proportional_sizes(d, du.filter_active([*old_rss, new_rs]))
            for rs, size in sizes:
                await self._scale_rs(rs, size, d, operation)

    async def _rollout_rolling(self, d: Obj, rs_list: list[Obj]) -> None:
        new_rs, old_rss = await self._get_all_rss(d, rs_list, create=True)
        assert new_rs is not None
        all_rss = [*old_rss, new_rs]
        if await self._reconcile_new(d, all_rss, new_rs) or await self._reconcile_old(d, all_rss, old_rss, new_rs):
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if dst.deployment_complete(d, d["status"]):
            await self._cleanup(d, old_rss)
        await self._sync_rollout_status(d, all_rss, new_rs)

    async def _reconcile_new(self, d: Obj, all_rss: list[Obj], new_rs: Obj) -> bool:
        if du.replicas(new_rs) == du.replicas(d):
            return False
        if du.replicas(new_rs) > du.replicas(d):
            return await self._scale_and_record(new_rs, du.replicas(d), d)
        return await self._scale_and_record(new_rs, du.new_rs_new_replicas(d, all_rss, new_rs), d)

    async def _reconcile_old(self, d: Obj, all_rss: list[Obj], old_rss: list[Obj], new_rs: Obj) -> bool:
        active_old = du.filter_active(old_rss)
        if not sum(du.replicas(rs) for rs in active_old):
            return False
        min_available = du.replicas(d) - du.max_unavailable(d)
        new_unavailable = du.replicas(new_rs) - int((new_rs.get("status") or {}).get("availableReplicas") or 0)
        max_scaled_down = sum(du.replicas(rs) for rs in all_rss) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        total = 0
        for rs, size in du.cleanup_unhealthy_steps(active_old, max_scaled_down):
            total += du.replicas(rs) - size
            await self._scale_and_record(rs, size, d)
        for rs, size in du.scale_down_old_steps([*active_old, new_rs], active_old, d):
            total += du.replicas(rs) - size
            await self._scale_and_record(rs, size, d)
        return total > 0

    async def _rollout_recreate(self, d: Obj, rs_list: list[Obj]) -> None:
        new_rs, old_rss = await self._get_all_rss(d, rs_list, create=False)
        scaled = False
        for rs in du.filter_active(old_rss):
            scaled = await self._scale_and_record(rs, 0, d) or scaled
        if scaled or self._old_pods_running(new_rs, old_rss):
            await self._sync_rollout_status(d, [*old_rss, new_rs], new_rs)
            return
        if new_rs is None:
            new_rs, old_rss = await self._get_all_rss(d, rs_list, create=True)
            assert new_rs is not None
        await self._scale_and_record(new_rs, du.replicas(d), d)
        if dst.deployment_complete(d, d["status"]):
            await self._cleanup(d, old_rss)
        await self._sync_rollout_status(d, [*old_rss, new_rs], new_rs)

    def _old_pods_running(self, new_rs: Obj | None, old_rss: list[Obj]) -> bool:
        if sum(int((rs.get("status") or {}).get("replicas") or 0) for rs in old_rss) > 0:
            return True
        old_uids = {rs["metadata"].get("uid") for rs in old_rss}
        old_uids.discard((new_rs or {}).get("metadata", {}).get("uid"))
        for pod in self.pods.items():
            refs = pod.metadata.ownerReferences or []
            owned_by_old = any(r.controller and r.uid in old_uids for r in refs)
            if owned_by_old and not (pod.status and pod.status.phase in ("Succeeded", "Failed")):
                return True
        return False

    async def _cleanup(self, d: Obj, old_rss: list[Obj]) -> None:
        limit = d["spec"].get("revisionHistoryLimit")
        if limit is None or int(limit) == du.MAX_INT32:
            return
        for rs in du.rss_to_cleanup(old_rss, int(limit)):
            try:
                await self.client.delete(ReplicaSet, _name(rs), namespace=rs["metadata"]["namespace"])
            except ApiError as err:
                if not is_not_found(err):
                    raise

    # --- status --------------------------------------------------------------------------------------------------------

    async def _sync_status(self, d: Obj, all_rss: Sequence[Obj | None], new_rs: Obj | None) -> None:
        status = dst.calculate_status(all_rss, new_rs, d, datetime.now(UTC))
        if status != d["status"]:
            d["status"] = status
            await self._write_status(d)

    async def _sync_rollout_status(self, d: Obj, all_rss: Sequence[Obj | None], new_rs: Obj | None) -> None:
        now = datetime.now(UTC)
        status = dst.rollout_status(d, all_rss, new_rs, now)
        if status != d["status"]:
            d["status"] = status
            await self._write_status(d)
            return
        after = dst.stuck_requeue_after(d, status, now)  # requeueStuckDeployment
        key = f"{d['metadata']['namespace']}/{_name(d)}"
        if after is not None and after < 1:
            self.queue.add_rate_limited(key)
        elif after is not None:
            self.queue.add_after(key, after + 1)
