"""The statefulset controller (kube-controller-manager `statefulset`): stable Pods and claims per ordinal.

Per sync, as kube's StatefulSetController: claim the namespace's Pods by selector (adopt orphans, release strays),
make sure the ControllerRevision of the current template exists (controllerutil_history; `status.collisionCount` on a
hash clash), then carry out what `ordering.plan` decides — creating a Pod's claims (kept if they exist) before the
Pod, deleting condemned, finished or outdated Pods — with kube's events ("create Pod web-0 in StatefulSet web
successful", "create Claim www-web-0 Pod web-0 in StatefulSet web success", "delete Pod web-1 in StatefulSet web
successful"), keep the claims' owner references in line with `persistentVolumeClaimRetentionPolicy`, write the status
and prune revisions beyond `revisionHistoryLimit` that no Pod uses. Creations and deletions in flight are tracked as
expectations, so a sync never acts on a cache that has not caught up.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from lightkube.resources.apps_v1 import ControllerRevision, StatefulSet, StatefulSetStatus
from lightkube.resources.core_v1 import PersistentVolumeClaim, Pod
from lightkube.types import PatchType

from pykubeadm.client import ApiError, is_already_exists, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil import (
    CONTROLLER_REVISION_HASH_LABEL,
    ControllerExpectations,
    controller_of,
    new_controller_ref,
    pod_key,
    selector_matches,
)
from pykubeadm.controllers.controllerutil_api import EventRecorder, api_error_message, claim, model
from pykubeadm.controllers.controllerutil_history import current_revision, prune_revisions
from pykubeadm.controllers.dictview import dict_view
from pykubeadm.controllers.runtime import Controller, TemporaryError
from pykubeadm.controllers.statefulset.identity import (
    API_VERSION,
    KIND,
    claim_owner_refs,
    new_claims,
    new_pod,
    ordinal_of,
    pod_revision,
    template_of_revision,
)
from pykubeadm.controllers.statefulset.ordering import Step, compute_status, plan

__all__ = ["StatefulSetController"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
COMPONENT: Final = "statefulset-controller"


class StatefulSetController(Controller):
    name = "statefulset"
    service_account = "statefulset-controller"
    workers = 5  # --concurrent-statefulset-syncs

    def setup(self) -> None:
        self.expectations = ControllerExpectations()
        self.recorder = EventRecorder(self.client, COMPONENT)
        self.sets = self.watch(StatefulSet, self._on_set, namespace="*")
        self.pods = dict_view(self.watch(Pod, self._on_pod, namespace="*"))
        self.claims = dict_view(self.watch(PersistentVolumeClaim, lambda *_: None, namespace="*"))
        self.revisions = dict_view(self.watch(ControllerRevision, lambda *_: None, namespace="*"))

    # --- event handlers ----------------------------------------------------------------------------------------------

    def _on_set(self, event: str, obj: Any, old: Any) -> None:
        key = f"{obj.metadata.namespace}/{obj.metadata.name}"
        if event == "DELETED":
            self.expectations.delete(key)
        self.queue.add(key)

    def _set_key(self, pod: Obj) -> str | None:
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != KIND:
            return None
        key = f"{pod['metadata'].get('namespace')}/{ref.get('name')}"
        found = self.sets.get(key)
        return key if found is not None and found.metadata.uid == ref.get("uid") else None

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        pod = obj.to_dict()
        key = self._set_key(pod)
        if key is None:
            if event != "DELETED" and controller_of(pod) is None:  # an orphan: the sets that may adopt it
                for sts in self.sets.items():
                    if sts.metadata.namespace == pod["metadata"].get("namespace") and selector_matches(
                        sts.spec.selector.to_dict() if sts.spec and sts.spec.selector else None,
                        pod["metadata"].get("labels"),
                    ):
                        self.queue.add(f"{sts.metadata.namespace}/{sts.metadata.name}")
            return
        if event == "ADDED" and not pod["metadata"].get("deletionTimestamp"):
            self.expectations.creation_observed(key)
        elif event == "DELETED" or pod["metadata"].get("deletionTimestamp"):
            self.expectations.deletion_observed(key, pod_key(pod))
        self.queue.add(key)

    # --- sync --------------------------------------------------------------------------------------------------------

    async def sync(self, key: Any) -> None:
        obj = self.sets.get(key)
        if obj is None:
            self.expectations.delete(key)
            return
        sts = obj.to_dict()
        meta, spec = sts["metadata"], sts.get("spec") or {}
        if meta.get("deletionTimestamp"):
            return
        namespace = meta["namespace"]
        pods = await claim(
            self.client,
            Pod,
            sts,
            new_controller_ref(sts, API_VERSION, KIND),
            spec.get("selector"),
            self.pods.items(namespace),
            lambda: self._still_there(sts),
        )
        owned_revisions = [
            r for r in self.revisions.items(namespace) if (controller_of(r) or {}).get("uid") == meta.get("uid")
        ]
        update_rev, old_revisions = await current_revision(
            self.client, sts, KIND, owned_revisions, lambda count: self._store_collision(sts, count)
        )
        current_name = (sts.get("status") or {}).get("currentRevision")
        current_rev = next((r for r in old_revisions if r["metadata"]["name"] == current_name), update_rev)
        now = datetime.now(UTC)
        decided = None
        error: BaseException | None = None
        if self.expectations.satisfied(key):
            decided = plan(sts, pods, current_rev["metadata"]["name"], update_rev["metadata"]["name"], now)
            try:
                await self._carry_out(key, sts, decided.steps, current_rev, update_rev)
                await self._retain_claims(sts, pods)
            except Exception as err:
                error = err
        status = compute_status(sts, pods, current_rev["metadata"]["name"], update_rev["metadata"]["name"], now)
        await self._update_status(sts, status)
        live = {pod_revision(p) for p in pods}
        hashes = {
            (r["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL)
            for r in [update_rev, *old_revisions]
            if r["metadata"]["name"] in live or r["metadata"]["name"] == status["currentRevision"]
        }
        limit = spec.get("revisionHistoryLimit")
        await prune_revisions(self.client, old_revisions, 10 if limit is None else int(limit), hashes)
        if error is not None:
            raise error
        if decided is not None and decided.recheck_after:
            self.queue.add_after(key, decided.recheck_after + 1)

    async def _still_there(self, sts: Obj) -> bool:
        meta = sts["metadata"]
        try:
            fresh = await self.client.get(StatefulSet, meta["name"], namespace=meta["namespace"])
        except ApiError:
            return False
        return bool(fresh.metadata and fresh.metadata.uid == meta.get("uid") and not fresh.metadata.deletionTimestamp)

    async def _store_collision(self, sts: Obj, count: int) -> None:
        body = copy.deepcopy(sts)
        body.setdefault("status", {})["collisionCount"] = count
        meta = body["metadata"]
        await self.client.replace(model(StatefulSetStatus, body), meta["name"], namespace=meta["namespace"])

    # --- pods and claims ---------------------------------------------------------------------------------------------

    async def _carry_out(self, key: str, sts: Obj, steps: list[Step], current_rev: Obj, update_rev: Obj) -> None:
        deletes = [s for s in steps if s.action == "delete"]
        creates = [s for s in steps if s.action == "create"]
        if deletes:
            self.expectations.expect_deletions(key, [pod_key(s.pod) for s in deletes if s.pod is not None])
            results = await asyncio.gather(*(self._delete(sts, s) for s in deletes), return_exceptions=True)
            for step, result in zip(deletes, results, strict=True):
                if isinstance(result, BaseException) and step.pod is not None:
                    self.expectations.deletion_observed(key, pod_key(step.pod))
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                raise errors[0]
            if creates and any(not s.condemned for s in deletes):
                return  # a finished Pod is re-created once its deletion is seen
        if creates:
            self.expectations.expect_creations(key, len(creates))
            created = await asyncio.gather(
                *(self._create(sts, s, current_rev if s.current else update_rev) for s in creates),
                return_exceptions=True,
            )
            for outcome in created:
                if isinstance(outcome, BaseException) or outcome is False:
                    self.expectations.creation_observed(key)
            failures = [r for r in created if isinstance(r, BaseException)]
            if failures:
                raise failures[0]

    def _event(self, sts: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(sts, type_, reason, message, kind=KIND, api_version=API_VERSION)

    async def _create(self, sts: Obj, step: Step, revision: Obj) -> bool:
        """Create the Pod's missing claims, then the Pod; False when the Pod already existed."""
        set_name = sts["metadata"]["name"]
        pod_name = f"{set_name}-{step.ordinal}"
        for wanted in new_claims(sts, step.ordinal):
            cname = wanted["metadata"]["name"]
            existing = self.claims.get(f"{wanted['metadata']['namespace']}/{cname}")
            if existing is not None:
                if existing["metadata"].get("deletionTimestamp"):
                    raise TemporaryError(f"pvc {cname} is being deleted", delay=1.0)
                continue
            try:
                await self.client.create(model(PersistentVolumeClaim, wanted))
            except ApiError as err:
                if is_already_exists(err):
                    continue
                message = f"create Claim {cname} for Pod {pod_name} in StatefulSet {set_name} failed error: "
                self._event(sts, "Warning", "FailedCreate", message + api_error_message(err))
                raise
            self._event(
                sts,
                "Normal",
                "SuccessfulCreate",
                f"create Claim {cname} Pod {pod_name} in StatefulSet {set_name} success",
            )
        template = template_of_revision(revision)
        pod = new_pod(sts, template, step.ordinal, revision["metadata"]["name"])
        try:
            await self.client.create(model(Pod, pod))
        except ApiError as err:
            if is_already_exists(err):
                return False
            message = f"create Pod {pod_name} in StatefulSet {set_name} failed error: {api_error_message(err)}"
            self._event(sts, "Warning", "FailedCreate", message)
            raise
        self._event(sts, "Normal", "SuccessfulCreate", f"create Pod {pod_name} in StatefulSet {set_name} successful")
        return True

    async def _delete(self, sts: Obj, step: Step) -> None:
        assert step.pod is not None
        meta = step.pod["metadata"]
        set_name = sts["metadata"]["name"]
        if step.condemned:
            await self._own_claims(sts, step.pod, step.ordinal, condemned=True)
        try:
            await self.client.delete(Pod, meta["name"], namespace=meta["namespace"])
        except ApiError as err:
            if is_not_found(err):
                return
            message = f"delete Pod {meta['name']} in StatefulSet {set_name} failed error: {api_error_message(err)}"
            self._event(sts, "Warning", "FailedDelete", message)
            raise
        self._event(
            sts, "Normal", "SuccessfulDelete", f"delete Pod {meta['name']} in StatefulSet {set_name} successful"
        )

    async def _retain_claims(self, sts: Obj, pods: list[Obj]) -> None:
        """Owner references of the live Pods' claims as the retention policy wants them (only when it deletes)."""
        policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
        if "Delete" not in (policy.get("whenDeleted"), policy.get("whenScaled")):
            return
        replicas = int((sts.get("spec") or {}).get("replicas", 1))
        for pod in pods:
            ordinal = ordinal_of(sts, pod)
            if ordinal is not None and not pod["metadata"].get("deletionTimestamp"):
                await self._own_claims(sts, pod, ordinal, condemned=ordinal >= replicas)

    async def _own_claims(self, sts: Obj, pod: Mapping[str, Any], ordinal: int, *, condemned: bool) -> None:
        for wanted in new_claims(sts, ordinal):
            found = self.claims.get(f"{wanted['metadata']['namespace']}/{wanted['metadata']['name']}")
            if found is None or found["metadata"].get("deletionTimestamp"):
                continue
            refs = claim_owner_refs(sts, found, pod, condemned)
            if refs == list(found["metadata"].get("ownerReferences") or []):
                continue
            patch = {
                "metadata": {
                    "ownerReferences": refs or None,
                    "resourceVersion": found["metadata"].get("resourceVersion"),
                }
            }
            try:
                await self.client.patch(
                    PersistentVolumeClaim,
                    found["metadata"]["name"],
                    patch,
                    namespace=found["metadata"]["namespace"],
                    patch_type=PatchType.MERGE,
                )
            except ApiError as err:
                if not is_not_found(err):
                    raise TemporaryError(f"updating the owners of claim {found['metadata']['name']}: {err}") from err

    # --- status ------------------------------------------------------------------------------------------------------

    async def _update_status(self, sts: Obj, status: Obj) -> None:
        meta = sts["metadata"]
        current = sts.get("status") or {}
        new = dict(status)
        new["collisionCount"] = int(current.get("collisionCount") or 0)
        if meta.get("generation"):
            new["observedGeneration"] = meta["generation"]
        if all(current.get(k) == v for k, v in new.items()):
            return
        body = copy.deepcopy(sts)
        body["status"] = {**current, **new}
        try:
            await self.client.replace(model(StatefulSetStatus, body), meta["name"], namespace=meta["namespace"])
        except ApiError as err:
            if is_not_found(err):
                return
            raise TemporaryError(f"updating status of {meta['namespace']}/{meta['name']}: {err}",
                                 delay=0.05 if is_conflict(err) else None) from err  # fmt: skip
