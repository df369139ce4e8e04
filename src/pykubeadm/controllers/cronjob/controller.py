"""The cronjob controller (kube's cronjob_controllerv2): creates a Job for every schedule time of a CronJob.

Per CronJob: reconcile `status.active` with the Jobs it owns (finished ones leave it with `SawCompletedJob`, vanished
ones with `MissingJob`; a Complete one moves `status.lastSuccessfulTime`), prune finished Jobs beyond
`successfulJobsHistoryLimit` / `failedJobsHistoryLimit`, then — unless suspended — find the most recent unmet schedule
time since `status.lastScheduleTime` (or creation, or now − `startingDeadlineSeconds`) and start Job
`<cronjob>-<minutes since epoch>` honouring `concurrencyPolicy` (Allow, Forbid, Replace), and requeue for the next
schedule time. The clock is the context's, so tests drive it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from lightkube.resources.batch_v1 import CronJob, Job

from pykubeadm.client import ApiError, is_already_exists, is_conflict, is_not_found
from pykubeadm.controllers.batchutil import ApiPath, delete, request
from pykubeadm.controllers.controllerutil_api import EventRecorder
from pykubeadm.controllers.runtime import Controller, TemporaryError
from pykubeadm.util.apitime import format_time, parse_time
from pykubeadm.util.cronschedule import MAX_MISSED, Schedule, ScheduleError, most_recent_unmet, parse_schedule

__all__ = [
    "SCHEDULED_TIMESTAMP_ANNOTATION",
    "CronJobController",
    "finished_condition",
    "job_from_template",
    "job_name",
]

log = logging.getLogger(__name__)

#: Annotation on each Job: its scheduled time (RFC 3339 in the CronJob's zone).
SCHEDULED_TIMESTAMP_ANNOTATION: Final = "batch.kubernetes.io/cronjob-scheduled-timestamp"
JOBS: Final = ApiPath("batch", "v1", "jobs", "Job", True)
CRONJOBS: Final = ApiPath("batch", "v1", "cronjobs", "CronJob", True)


def job_name(cronjob: str, scheduled: datetime) -> str:
    """`<cronjob>-<scheduled time in minutes since the epoch>` (getJobName)."""
    return f"{cronjob}-{int(scheduled.timestamp()) // 60}"


def _rfc3339_in(t: datetime, zone: Any) -> str:
    local = t.astimezone(zone)
    text = local.isoformat(timespec="seconds")
    return text.replace("+00:00", "Z") if local.utcoffset() == timedelta(0) else text


def job_from_template(cj: Mapping[str, Any], scheduled: datetime, zone: Any = UTC) -> dict[str, Any]:
    """The Job the CronJob starts for `scheduled`: its jobTemplate with name, owner reference and annotation."""
    meta = cj["metadata"]
    template = cj.get("spec", {}).get("jobTemplate") or {}
    tmeta = template.get("metadata") or {}
    annotations = dict(tmeta.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = _rfc3339_in(scheduled, zone)
    job_meta: dict[str, Any] = {
        "name": job_name(meta["name"], scheduled),
        "namespace": meta.get("namespace"),
        "annotations": annotations,
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if tmeta.get("labels"):
        job_meta["labels"] = dict(tmeta["labels"])
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": dict(template.get("spec") or {})}


def finished_condition(job: Mapping[str, Any]) -> str | None:
    """ "Complete" or "Failed" when the Job has that condition True (IsJobFinished), else None."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def _owned_by(job: Mapping[str, Any], uid: str) -> bool:
    return any(ref.get("controller") and ref.get("uid") == uid for ref in job["metadata"].get("ownerReferences") or [])


def _job_ref(job: Mapping[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return {
        "kind": "Job",
        "namespace": meta.get("namespace"),
        "name": meta["name"],
        "uid": meta.get("uid"),
        "apiVersion": "batch/v1",
        "resourceVersion": meta.get("resourceVersion"),
    }


def _rv(obj: Mapping[str, Any]) -> int | None:
    value = (obj.get("metadata") or {}).get("resourceVersion") or ""
    return int(value) if value.isdigit() else None


def _start_key(job: Mapping[str, Any]) -> tuple[bool, str, str]:
    start = (job.get("status") or {}).get("startTime")
    return (start is None, start or "", job["metadata"]["name"])


class CronJobController(Controller):
    name = "cronjob"
    service_account = "cronjob-controller"

    def setup(self) -> None:
        self.recorder = EventRecorder(self.client, "cronjob-controller")
        #: key → resourceVersion of our last status write (a cached CronJob older than that is stale)
        self._written: dict[str, int] = {}
        self.cronjobs = self.watch(CronJob, self._on_cronjob, namespace="*")
        self.jobs = self.watch(Job, self._on_job, namespace="*")

    def _on_cronjob(self, event: str, obj: Any, old: Any) -> None:
        key = f"{obj.metadata.namespace}/{obj.metadata.name}"
        if event == "DELETED":
            self._written.pop(key, None)
        else:
            self.queue.add(key)

    def _on_job(self, event: str, obj: Any, old: Any) -> None:
        for ref in obj.metadata.ownerReferences or []:
            if ref.controller and ref.kind == "CronJob" and ref.apiVersion.startswith("batch/"):
                self.queue.add(f"{obj.metadata.namespace}/{ref.name}")

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.ctx.clock(), UTC)

    async def sync(self, key: Any) -> None:
        obj = self.cronjobs.get(key)
        if obj is None:
            return
        cj = obj.to_dict()
        rv, written = _rv(cj), self._written.get(key)
        if rv is not None and written is not None and rv < written:
            return  # the informer has not shown our last status write yet; its event brings the CronJob back
        cj.setdefault("apiVersion", "batch/v1")
        cj.setdefault("kind", "CronJob")
        uid = cj["metadata"]["uid"]
        namespace = cj["metadata"]["namespace"]
        children = [
            j.to_dict() for j in self.jobs.items() if j.metadata.namespace == namespace and _owned_by(j.to_dict(), uid)
        ]
        active_uids = {ref.get("uid") for ref in (cj.get("status") or {}).get("active") or []}
        if any(finished_condition(j) is None and j["metadata"].get("uid") not in active_uids for j in children):
            # our cache may predate the status write that recorded the Job: read the CronJob itself (as kube does)
            try:
                cj = await request(self.client, "GET", CRONJOBS.url(namespace, cj["metadata"]["name"]))
            except ApiError as err:
                if is_not_found(err):
                    return
                raise
        status = cj.setdefault("status", {})
        before = repr(status)
        requeue = await self._reconcile(cj, children)
        if repr(status) != before:
            await self._update_status(key, cj)
        if requeue is not None:
            self.queue.add_after(key, max(requeue, 0.0) + 0.1)

    async def _reconcile(self, cj: dict[str, Any], children: list[dict[str, Any]]) -> float | None:
        status = cj["status"]
        active = list(status.get("active") or [])
        active_uids = {ref.get("uid") for ref in active}
        child_uids = {j["metadata"].get("uid") for j in children}
        for job in children:
            done = finished_condition(job)
            juid = job["metadata"].get("uid")
            if done is None and juid not in active_uids:
                self.recorder.event(
                    cj,
                    "Warning",
                    "UnexpectedJob",
                    f"Saw a job that the controller did not create or forgot: {job['metadata']['name']}",
                )
            elif done is not None and juid in active_uids:
                active = [ref for ref in active if ref.get("uid") != juid]
                active_uids.discard(juid)
                self.recorder.event(
                    cj, "Normal", "SawCompletedJob", f"Saw completed job: {job['metadata']['name']}, status: {done}"
                )
            if done == "Complete":
                completed = parse_time((job.get("status") or {}).get("completionTime"))
                last_ok = parse_time(status.get("lastSuccessfulTime"))
                if completed is not None and (last_ok is None or completed > last_ok):
                    status["lastSuccessfulTime"] = format_time(completed)
        for ref in list(active):
            if ref.get("uid") in child_uids:
                continue
            try:
                live = await request(self.client, "GET", JOBS.url(cj["metadata"]["namespace"], ref["name"]))
                if live["metadata"].get("uid") == ref.get("uid"):
                    continue
            except ApiError as err:
                if not is_not_found(err):
                    raise
            active = [r for r in active if r.get("uid") != ref.get("uid")]
            self.recorder.event(cj, "Normal", "MissingJob", f"Active job went missing: {ref['name']}")
        self._set_active(status, active)
        await self._cleanup_history(cj, children)
        if cj["metadata"].get("deletionTimestamp"):
            return None
        return await self._maybe_start(cj, active)

    @staticmethod
    def _set_active(status: dict[str, Any], active: list[dict[str, Any]]) -> None:
        if active:
            status["active"] = active
        else:
            status.pop("active", None)

    async def _maybe_start(self, cj: dict[str, Any], active: list[dict[str, Any]]) -> float | None:
        spec = cj.get("spec") or {}
        status = cj["status"]
        tz = spec.get("timeZone")
        try:
            schedule = parse_schedule(spec.get("schedule", ""), tz)
        except ScheduleError as err:
            if tz is not None and str(err).startswith("unknown time zone"):
                self.recorder.event(cj, "Warning", "UnknownTimeZone", f"invalid timeZone: {json.dumps(tz)}: {err}")
            else:
                self.recorder.event(
                    cj,
                    "Warning",
                    "UnparseableSchedule",
                    f"unparseable schedule: {json.dumps(spec.get('schedule', ''))} : {err}",
                )
            return None
        if spec.get("suspend"):
            return None
        now = self.now()
        scheduled = await self._next_unmet(cj, schedule, now)
        if scheduled is None:
            return self._until_next(schedule, now)
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + timedelta(seconds=int(deadline)) < now:
            self.recorder.event(
                cj,
                "Normal",
                "MissSchedule",
                f"Missed scheduled time to start a job: {scheduled.strftime('%a, %d %b %Y %H:%M:%S +0000')}",
            )
            return self._until_next(schedule, now)
        name = job_name(cj["metadata"]["name"], scheduled)
        if any(ref.get("name") == name for ref in active) or parse_time(status.get("lastScheduleTime")) == scheduled:
            return self._until_next(schedule, now)
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and active:
            self.recorder.event(
                cj,
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
            )
            return self._until_next(schedule, now)
        if policy == "Replace":
            for ref in list(active):
                if await self._delete_job(cj, ref["name"], ref.get("uid")):
                    active.remove(ref)
            self._set_active(status, active)
        job = job_from_template(cj, scheduled, schedule.zone)
        try:
            created = await request(self.client, "POST", JOBS.url(cj["metadata"]["namespace"]), body=job)
        except ApiError as err:
            if not is_already_exists(err):
                self.recorder.event(cj, "Warning", "FailedCreate", f"Error creating job: {err}")
                raise
            created = await request(self.client, "GET", JOBS.url(cj["metadata"]["namespace"], name))
            if not _owned_by(created, cj["metadata"]["uid"]) or finished_condition(created):
                return self._until_next(schedule, now)
        else:
            self.recorder.event(cj, "Normal", "SuccessfulCreate", f"Created job {name}")
        if not any(ref.get("uid") == created["metadata"].get("uid") for ref in active):
            active.append(_job_ref(created))
        self._set_active(status, active)
        status["lastScheduleTime"] = format_time(scheduled)
        return self._until_next(schedule, now)

    async def _next_unmet(self, cj: dict[str, Any], schedule: Schedule, now: datetime) -> datetime | None:
        meta, spec, status = cj["metadata"], cj.get("spec") or {}, cj["status"]
        earliest = parse_time(status.get("lastScheduleTime")) or parse_time(meta.get("creationTimestamp")) or now
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None:
            earliest = max(earliest, now - timedelta(seconds=int(deadline)))
        scheduled, missed = most_recent_unmet(schedule, earliest, now)
        if missed > MAX_MISSED:
            self.recorder.event(
                cj,
                "Warning",
                "TooManyMissedTimes",
                f"too many missed start times: {missed}. Set or decrease .spec.startingDeadlineSeconds "
                "or check clock skew",
            )
        return scheduled

    @staticmethod
    def _until_next(schedule: Schedule, now: datetime) -> float | None:
        nxt = schedule.next_after(now)
        return None if nxt is None else (nxt - now).total_seconds()

    async def _delete_job(self, cj: dict[str, Any], name: str, uid: str | None) -> bool:
        try:
            await delete(self.client, JOBS.url(cj["metadata"]["namespace"], name), uid=uid, policy="Background")
        except ApiError as err:
            if is_not_found(err):
                return True
            self.recorder.event(cj, "Warning", "FailedDelete", f"Deleted job: {err}")
            return False
        self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {name}")
        return True

    async def _cleanup_history(self, cj: dict[str, Any], children: list[dict[str, Any]]) -> None:
        spec = cj.get("spec") or {}
        ok_limit, failed_limit = spec.get("successfulJobsHistoryLimit"), spec.get("failedJobsHistoryLimit")
        for kind, limit in (("Complete", ok_limit), ("Failed", failed_limit)):
            if limit is None:
                continue
            finished = sorted((j for j in children if finished_condition(j) == kind), key=_start_key)
            for job in finished[: max(0, len(finished) - int(limit))]:
                await self._delete_job(cj, job["metadata"]["name"], job["metadata"].get("uid"))

    async def _update_status(self, key: str, cj: dict[str, Any]) -> None:
        meta = cj["metadata"]
        try:
            written = await request(
                self.client, "PUT", CRONJOBS.url(meta["namespace"], meta["name"], "status"), body=cj
            )
        except ApiError as err:
            if is_not_found(err):
                return
            if is_conflict(err):
                raise TemporaryError("cronjob changed meanwhile") from err
            raise
        rv = _rv(written or {})
        if rv is not None:
            self._written[key] = rv
