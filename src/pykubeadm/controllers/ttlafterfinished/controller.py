"""The ttl-after-finished controller: deletes a finished Job `spec.ttlSecondsAfterFinished` after it finished.

A Job is finished when its Complete or Failed condition is True; it finished at that condition's lastTransitionTime.
Before deleting, the Job is read fresh and the TTL checked again (it may have changed); the delete carries a UID
precondition and, as kube's controller does, `propagationPolicy: Foreground`, so its Pods go first.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from lightkube.resources.batch_v1 import Job

from pykubeadm.client import ApiError, is_not_found, status_code
from pykubeadm.controllers.batchutil import ApiPath, delete, request
from pykubeadm.controllers.runtime import Controller
from pykubeadm.util.apitime import parse_time

__all__ = ["TTLAfterFinishedController", "expires_at"]

log = logging.getLogger(__name__)

JOBS: Final = ApiPath("batch", "v1", "jobs", "Job", True)


def expires_at(job: Mapping[str, Any]) -> datetime | None:
    """When a finished Job with a TTL may be deleted (None: no TTL, not finished, or already being deleted)."""
    meta, spec = job.get("metadata") or {}, job.get("spec") or {}
    ttl = spec.get("ttlSecondsAfterFinished")
    if ttl is None or meta.get("deletionTimestamp"):
        return None
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            finished = parse_time(cond.get("lastTransitionTime"))
            if finished is not None:
                return finished + timedelta(seconds=int(ttl))
    return None


class TTLAfterFinishedController(Controller):
    name = "ttl-after-finished"
    service_account = "ttl-after-finished-controller"

    def setup(self) -> None:
        self.jobs = self.watch(Job, self._on_job, namespace="*")

    def _on_job(self, event: str, obj: Any, old: Any) -> None:
        if event != "DELETED" and obj.spec is not None and obj.spec.ttlSecondsAfterFinished is not None:
            self.queue.add(f"{obj.metadata.namespace}/{obj.metadata.name}")

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.ctx.clock(), UTC)

    def _wait(self, key: str, job: Mapping[str, Any]) -> bool:
        """True (and requeued) while the Job's TTL has not run out."""
        when = expires_at(job)
        if when is None:
            return True
        left = (when - self.now()).total_seconds()
        if left > 0:
            self.queue.add_after(key, left + 0.05)
            return True
        return False

    async def sync(self, key: Any) -> None:
        obj = self.jobs.get(key)
        if obj is None or self._wait(key, obj.to_dict()):
            return
        namespace, name = key.split("/", 1)
        try:
            fresh = await request(self.client, "GET", JOBS.url(namespace, name))
        except ApiError as err:
            if is_not_found(err):
                return
            raise
        if self._wait(key, fresh):
            return
        log.info("cleaning up Job %s (ttlSecondsAfterFinished expired)", key)
        try:
            await delete(self.client, JOBS.url(namespace, name), uid=fresh["metadata"]["uid"], policy="Foreground")
        except ApiError as err:
            if status_code(err) not in (404, 409):
                raise
