"""The job controller (batch/v1 Jobs): runs Pods until completions succeed, or fails the Job as kube 1.33 does.

Per Job: count its Pods (terminal ones with the `batch.kubernetes.io/job-tracking` finalizer are recorded in
`status.uncountedTerminatedPods` — for an Indexed Job in `status.completedIndexes` — then lose the finalizer, then move
into `status.succeeded` / `status.failed`), decide whether it is done (SuccessCriteriaMet/CompletionsReached,
FailureTarget/BackoffLimitExceeded or DeadlineExceeded; the final Complete/Failed follows once no Pod is left), and
otherwise keep `parallelism` Pods (capped by what is still to complete) running: creating them in slow-start batches
after the failure back-off, deleting extras, or all of them while `suspend` is true. Status is written through
jobs/status with the Job's resourceVersion; expectations keep a lagging Pod cache from causing extra Pods.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Pod

from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.batchutil import ApiPath, request
from pykubeadm.controllers.controllerutil import (
    ControllerExpectations,
    active_pods_ranked,
    controller_of,
    is_pod_active,
    is_pod_ready,
    is_pod_terminal,
    pod_key,
    slow_start_batches,
)
from pykubeadm.controllers.controllerutil_api import EventRecorder, api_error_message
from pykubeadm.controllers.job.status import (
    TRACKING_FINALIZER,
    backoff_limit,
    backoff_remaining,
    find_condition,
    finish_time,
    format_indexes,
    has_condition,
    is_pod_failed,
    match_pod_failure_policy,
    new_condition,
    parse_indexes,
    past_deadline,
    pod_for_job,
    pod_index,
    restarts_exceed_limit,
    set_condition,
    wanted_active,
)
from pykubeadm.controllers.runtime import Controller, TemporaryError
from pykubeadm.util.apitime import format_time

__all__ = ["JobController"]

log = logging.getLogger(__name__)

JOBS: Final = ApiPath("batch", "v1", "jobs", "Job", True)
PODS: Final = ApiPath("", "v1", "pods", "Pod", True)
_BACKOFF_MSG: Final = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
_DEADLINE_MSG: Final = ("DeadlineExceeded", "Job was active longer than specified deadline")
_COMPLETED_MSG: Final = ("CompletionsReached", "Reached expected number of succeeded pods")


def _rv(obj: Mapping[str, Any]) -> int | None:
    value = (obj.get("metadata") or {}).get("resourceVersion") or ""
    return int(value) if value.isdigit() else None


class JobController(Controller):
    name = "job"
    service_account = "job-controller"
    workers = 2

    def setup(self) -> None:
        self.recorder = EventRecorder(self.client, "job-controller")
        self.expectations = ControllerExpectations()
        #: job key → resourceVersion of our last status write (a cached Job older than that is stale)
        self._written: dict[str, int] = {}
        #: job key → UIDs of Pods whose tracking finalizer we removed (until the cache shows it)
        self._released: dict[str, set[str]] = {}
        #: job key → (failures since the last success, time of the last failure)
        self._backoff: dict[str, tuple[int, datetime | None]] = {}
        #: jobs whose last Pod creation failed (retried with the queue's back-off)
        self._create_failed: set[str] = set()
        self.jobs = self.watch(Job, self._on_job, namespace="*")
        self.pods = self.watch(Pod, self._on_pod, namespace="*")

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.ctx.clock(), UTC)

    # --- event handlers --------------------------------------------------------------------------------------------

    def _on_job(self, event: str, obj: Any, old: Any) -> None:
        key = f"{obj.metadata.namespace}/{obj.metadata.name}"
        if event == "DELETED":
            for store in (self._written, self._released, self._backoff):
                store.pop(key, None)
            self.expectations.delete(key)
        self.queue.add(key)

    def _on_pod(self, event: str, obj: Any, old: Any) -> None:
        pod = obj.to_dict()
        ref = controller_of(pod)
        tracked = TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or [])
        if ref is None or ref.get("kind") != "Job":
            if tracked and event != "DELETED":
                self.queue.add(("pod", pod_key(pod)))  # an orphan still holding our finalizer
            return
        key = f"{pod['metadata'].get('namespace')}/{ref.get('name')}"
        if event == "ADDED" and not pod["metadata"].get("deletionTimestamp"):
            self.expectations.creation_observed(key)
        elif event == "DELETED" or (
            pod["metadata"].get("deletionTimestamp") and old is not None and not old.metadata.deletionTimestamp
        ):
            self.expectations.deletion_observed(key, pod_key(pod))
        self.queue.add(key)
        if tracked and event != "DELETED" and self.jobs.get(key) is None:
            self.queue.add(("pod", pod_key(pod)))

    # --- sync ------------------------------------------------------------------------------------------------------

    async def sync(self, key: Any) -> None:
        if isinstance(key, tuple):
            await self._release_orphan(key[1])
            return
        obj = self.jobs.get(key)
        if obj is None:
            return
        job = obj.to_dict()
        job.setdefault("apiVersion", "batch/v1")
        job.setdefault("kind", "Job")
        cached_rv, written = _rv(job), self._written.get(key)
        if written is not None and cached_rv is not None and cached_rv < written:
            return  # the informer has not shown our last write yet; its event brings the Job back
        if not self.expectations.satisfied(key):
            return
        uid = job["metadata"]["uid"]
        pods = [
            p.to_dict()
            for p in self.pods.items()
            if p.metadata.namespace == job["metadata"]["namespace"]
            and any(r.controller and r.uid == uid for r in p.metadata.ownerReferences or [])
        ]
        status = job.get("status") or {}
        finished = has_condition(status, "Complete") or has_condition(status, "Failed")
        if finished or job["metadata"].get("deletionTimestamp"):
            await self._release(key, [p for p in pods if TRACKING_FINALIZER in (p["metadata"].get("finalizers") or [])])
            return
        await self._reconcile(key, job, pods)

    async def _reconcile(self, key: str, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        spec = job.get("spec") or {}
        old_status = job.get("status") or {}
        status: dict[str, Any] = copy.deepcopy(old_status)
        now = self.now()
        indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions")
        released = self._released.setdefault(key, set())
        released &= {
            p["metadata"]["uid"] for p in pods if TRACKING_FINALIZER in (p["metadata"].get("finalizers") or [])
        }

        uncounted = status.get("uncountedTerminatedPods") or {}
        unc_ok, unc_failed = list(uncounted.get("succeeded") or []), list(uncounted.get("failed") or [])
        done_indexes = parse_indexes(status.get("completedIndexes"), completions) if indexed else set()
        suspended = bool(spec.get("suspend"))
        to_release: list[dict[str, Any]] = []
        new_failed: list[dict[str, Any]] = []
        newest_success: datetime | None = None
        policy_failure: str | None = None
        for pod in pods:
            meta = pod["metadata"]
            if TRACKING_FINALIZER not in (meta.get("finalizers") or []) or meta["uid"] in released:
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Succeeded":
                to_release.append(pod)
                newest_success = max(filter(None, [newest_success, finish_time(pod, now)]))
                if indexed:
                    index = pod_index(pod)
                    if index is not None and completions is not None and index < int(completions):
                        done_indexes.add(index)
                elif meta["uid"] not in unc_ok:
                    unc_ok.append(meta["uid"])
            elif is_pod_failed(pod, spec) and (phase == "Failed" or not suspended):
                to_release.append(pod)
                if spec.get("podFailurePolicy") and phase == "Failed":
                    action, message = match_pod_failure_policy(spec["podFailurePolicy"], pod)
                    if action == "Ignore":
                        continue  # replaced, but neither counted nor backed off
                    if action == "FailJob" and policy_failure is None:
                        policy_failure = message
                if meta["uid"] not in unc_failed:
                    unc_failed.append(meta["uid"])
                    new_failed.append(pod)
        self._track_backoff(key, new_failed, newest_success, now)

        active = [p for p in pods if is_pod_active(p)]
        terminating = [p for p in pods if p["metadata"].get("deletionTimestamp") and not is_pod_terminal(p)]
        succeeded = len(done_indexes) if indexed else int(status.get("succeeded") or 0) + len(unc_ok)
        failed = int(status.get("failed") or 0) + len(unc_failed)
        if status.get("startTime") is None and not suspended:
            status["startTime"] = format_time(now)

        target = self._target(spec, status, active, succeeded, failed, now, policy_failure)
        requeue: float | None = None
        deleted = 0
        if target is not None:
            ctype, reason, message = target
            set_condition(status, new_condition(ctype, reason, message, now))
            deleted += await self._delete_pods(key, job, active)
            active = []
        elif suspended:
            if active:
                deleted += await self._delete_pods(key, job, active)
                active = []
            if set_condition(status, new_condition("Suspended", "JobSuspended", "Job suspended", now)):
                self.recorder.event(job, "Normal", "Suspended", "Job suspended")
        else:
            if has_condition(status, "Suspended"):
                set_condition(status, new_condition("Suspended", "JobResumed", "Job resumed", now, status="False"))
                status["startTime"] = format_time(now)
                self.recorder.event(job, "Normal", "Resumed", "Job resumed")
            active, requeue = await self._manage(key, job, active, succeeded, done_indexes if indexed else None, now)
            _, left = past_deadline(spec, status, now)
            if left is not None:
                requeue = left if requeue is None else min(requeue, left)

        status["active"] = len(active)
        status["ready"] = sum(1 for p in active if is_pod_ready(p))
        status["terminating"] = len(terminating)
        if indexed:
            status["completedIndexes"] = format_indexes(done_indexes)
            status["succeeded"] = succeeded
        status["uncountedTerminatedPods"] = {
            k: v for k, v in (("succeeded", sorted(unc_ok)), ("failed", sorted(unc_failed))) if v
        }
        job = await self._write_status(key, job, status, old_status)
        # the UIDs are recorded: drop the finalizers, then count those Pods
        await self._release(key, to_release)
        status = copy.deepcopy(job.get("status") or {})
        holding = {p["metadata"]["uid"] for p in pods if TRACKING_FINALIZER in (p["metadata"].get("finalizers") or [])}
        gone = set(unc_ok + unc_failed) - (holding - released)
        moved_ok = [u for u in unc_ok if u in gone]
        moved_failed = [u for u in unc_failed if u in gone]
        if not indexed:
            status["succeeded"] = int(status.get("succeeded") or 0) + len(moved_ok)
        status["failed"] = int(status.get("failed") or 0) + len(moved_failed)
        left_ok = [u for u in unc_ok if u not in gone]
        left_failed = [u for u in unc_failed if u not in gone]
        status["uncountedTerminatedPods"] = {k: v for k, v in (("succeeded", left_ok), ("failed", left_failed)) if v}
        self._finish(job, status, bool(active or terminating or deleted or left_ok or left_failed), now)
        await self._write_status(key, job, status, job.get("status") or {})
        if requeue is not None:
            self.queue.add_after(key, requeue + 0.05)
        if key in self._create_failed:
            self._create_failed.discard(key)
            raise TemporaryError("failed to create pods")

    def _target(
        self,
        spec: Mapping[str, Any],
        status: Mapping[str, Any],
        active: list[dict[str, Any]],
        succeeded: int,
        failed: int,
        now: datetime,
        policy_failure: str | None,
    ) -> tuple[str, str, str] | None:
        """The interim terminal condition: kept once set, else decided from counts, back-off limit and deadline."""
        for ctype in ("FailureTarget", "SuccessCriteriaMet"):
            cond = find_condition(status, ctype)
            if cond is not None and cond.get("status") == "True":
                return ctype, str(cond.get("reason", "")), str(cond.get("message", ""))
        if policy_failure is not None:
            return "FailureTarget", "PodFailurePolicy", policy_failure
        limit = backoff_limit(spec)
        if failed > limit or restarts_exceed_limit(spec, active):
            return ("FailureTarget", *_BACKOFF_MSG)
        if past_deadline(spec, status, now)[0]:
            return ("FailureTarget", *_DEADLINE_MSG)
        completions = spec.get("completions")
        complete = succeeded >= int(completions) if completions is not None else succeeded > 0 and not active
        if complete:
            return ("SuccessCriteriaMet", *_COMPLETED_MSG)
        return None

    def _finish(
        self,
        job: Mapping[str, Any],
        status: dict[str, Any],
        pods_left: bool,
        now: datetime,
    ) -> None:
        """Turn FailureTarget / SuccessCriteriaMet into Failed / Complete once no Pod is running or uncounted."""
        if pods_left:
            return
        for interim, final in (("FailureTarget", "Failed"), ("SuccessCriteriaMet", "Complete")):
            cond = find_condition(status, interim)
            if cond is None or cond.get("status") != "True" or has_condition(status, final):
                continue
            reason, message = str(cond.get("reason", "")), str(cond.get("message", ""))
            set_condition(status, new_condition(final, reason, message, now))
            if final == "Complete":
                status["completionTime"] = format_time(now)
                self.recorder.event(job, "Normal", "Completed", "Job completed")
            else:
                self.recorder.event(job, "Warning", reason, message)

    def _track_backoff(
        self, key: str, new_failed: list[dict[str, Any]], newest_success: datetime | None, now: datetime
    ) -> None:
        failures, last = self._backoff.get(key, (0, None))
        if newest_success is not None and (last is None or newest_success > last):
            failures, last = 0, None
        for pod in new_failed:
            t = finish_time(pod, now)
            failures += 1
            last = t if last is None or t > last else last
        self._backoff[key] = (failures, last)

    # --- pods ------------------------------------------------------------------------------------------------------

    async def _manage(
        self,
        key: str,
        job: dict[str, Any],
        active: list[dict[str, Any]],
        succeeded: int,
        done_indexes: set[int] | None,
        now: datetime,
    ) -> tuple[list[dict[str, Any]], float | None]:
        """Create or delete Pods toward the wanted number; returns (active Pods, seconds to wait for back-off)."""
        spec = job.get("spec") or {}
        free: list[int | None] = []
        pending = None
        if done_indexes is not None:
            completions = int(spec.get("completions") or 0)
            busy = {pod_index(p) for p in active}
            free = [i for i in range(completions) if i not in done_indexes and i not in busy]
            pending = completions - len(done_indexes)
        want = wanted_active(spec, succeeded, pending)
        if len(active) > want:
            ranked = active_pods_ranked(active)
            extra = ranked[: len(active) - want]
            await self._delete_pods(key, job, extra)
            return [p for p in active if p not in extra], None
        missing = want - len(active)
        if done_indexes is not None:
            missing = min(missing, len(free))
        else:
            free = [None] * missing
        if missing <= 0:
            return active, None
        failures, last = self._backoff.get(key, (0, None))
        wait = backoff_remaining(failures, last, now).total_seconds()
        if wait > 0:
            return active, wait
        self.expectations.expect_creations(key, missing)
        created = 0
        for batch in slow_start_batches(missing):
            ok = 0
            for index in free[created : created + batch]:
                if await self._create_pod(key, job, index):
                    ok += 1
            created += batch
            if ok < batch:
                self.expectations.lower(key, add=missing - created)
                self._create_failed.add(key)
                break
        return active, None

    async def _create_pod(self, key: str, job: dict[str, Any], index: int | None) -> bool:
        pod = pod_for_job(job, index)
        try:
            created = await request(self.client, "POST", PODS.url(job["metadata"]["namespace"]), body=pod)
        except ApiError as err:
            self.expectations.lower(key, add=1)
            self.recorder.event(job, "Warning", "FailedCreate", f"Error creating: {api_error_message(err)}")
            return False
        self.recorder.event(job, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")
        return True

    async def _delete_pods(self, key: str, job: dict[str, Any], pods: list[dict[str, Any]]) -> int:
        """Delete `pods` (with events); returns how many deletions were asked for."""
        todo = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        if not todo:
            return 0
        self.expectations.expect_deletions(key, [pod_key(p) for p in todo])
        for pod in todo:
            meta = pod["metadata"]
            try:
                await request(self.client, "DELETE", PODS.url(meta["namespace"], meta["name"]))
            except ApiError as err:
                self.expectations.deletion_observed(key, pod_key(pod))
                if not is_not_found(err):
                    self.recorder.event(job, "Warning", "FailedDelete", f"Error deleting: {api_error_message(err)}")
                continue
            self.recorder.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")
        return len(todo)

    async def _release_orphan(self, key: str) -> None:
        """Drop our finalizer from a Pod whose Job is gone, finished or no longer its controller (cleanupPodFinalizers)."""
        obj = self.pods.get(key)
        if obj is None:
            return
        pod = obj.to_dict()
        if TRACKING_FINALIZER not in (pod["metadata"].get("finalizers") or []):
            return
        ref = controller_of(pod)
        if ref is not None and ref.get("kind") == "Job":
            try:
                job = await request(self.client, "GET", JOBS.url(pod["metadata"]["namespace"], ref["name"]))
            except ApiError as err:
                if not is_not_found(err):
                    raise
            else:
                status = job.get("status") or {}
                finished = has_condition(status, "Complete") or has_condition(status, "Failed")
                if job["metadata"].get("uid") == ref.get("uid") and not finished:
                    return  # its Job is alive and will count it
        await self._release(key, [pod])
        self._released.pop(key, None)

    async def _release(self, key: str, pods: list[dict[str, Any]]) -> None:
        """Remove the tracking finalizer from `pods` (remembering which, until the cache catches up)."""
        released = self._released.setdefault(key, set())
        for pod in pods:
            meta = pod["metadata"]
            kept = [f for f in meta.get("finalizers") or [] if f != TRACKING_FINALIZER]
            body = {"metadata": {"finalizers": kept or None, "resourceVersion": meta.get("resourceVersion")}}
            try:
                await request(
                    self.client,
                    "PATCH",
                    PODS.url(meta["namespace"], meta["name"]),
                    body=body,
                    content_type="application/merge-patch+json",
                )
            except ApiError as err:
                if is_not_found(err):
                    released.add(meta["uid"])
                    continue
                if is_conflict(err):
                    raise TemporaryError(f"pod {meta['name']} changed meanwhile", 0.1) from err
                raise
            released.add(meta["uid"])

    async def _write_status(
        self, key: str, job: dict[str, Any], status: dict[str, Any], old: Mapping[str, Any]
    ) -> dict[str, Any]:
        for field in ("active", "succeeded", "failed"):  # int32 with omitempty in batch/v1 JobStatus
            if not status.get(field):
                status.pop(field, None)
        if status == old:
            return job
        body = {**job, "status": status}
        meta = job["metadata"]
        try:
            written = await request(self.client, "PUT", JOBS.url(meta["namespace"], meta["name"], "status"), body=body)
        except ApiError as err:
            if is_not_found(err):
                raise TemporaryError("job deleted meanwhile", 1.0) from err
            if is_conflict(err):
                raise TemporaryError("job changed meanwhile", 0.1) from err
            raise
        rv = _rv(written)
        if rv is not None:
            self._written[key] = rv
        written.setdefault("apiVersion", "batch/v1")
        written.setdefault("kind", "Job")
        return dict(written)
