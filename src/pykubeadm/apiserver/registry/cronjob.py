"""CronJob strategy (batch/v1): kube's defaults, schedule/timeZone/concurrencyPolicy validation (the schedule is parsed
the way the cronjob controller parses it), the 52-character name limit and the CronJob table."""

from __future__ import annotations

import re
from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col, human_duration, parse_time
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy, field_invalid, required
from pykubeadm.apiserver.registry.jobspec import nonnegative, not_supported, validate_job_spec
from pykubeadm.apiserver.registry.podspec import default_pod_spec
from pykubeadm.apiserver.registry.workloads import selector_string
from pykubeadm.apiserver.status import Cause
from pykubeadm.util.cronschedule import ScheduleError, load_zone, parse_schedule

__all__ = ["CronJobStrategy"]

#: A CronJob's name plus the 11-character Job suffix must fit a label value (kube's validation).
MAX_NAME_LENGTH = 52
_CONCURRENCY = ("Allow", "Forbid", "Replace")
_TZ_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


def _validate_time_zone(tz: Any) -> list[Cause]:
    path = "spec.timeZone"
    if tz is None:
        return []
    if not isinstance(tz, str) or not tz:
        return [field_invalid(path, tz, "timeZone must be nil or non-empty string")]
    if tz.lower() == "local":
        return [
            field_invalid(
                path, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
            )
        ]
    bad = any(p in (".", "..") or p.startswith("-") or not _TZ_PART.match(p) for p in tz.split("/"))
    if not bad:
        try:
            load_zone(tz)
        except ScheduleError:
            bad = True
    return [field_invalid(path, tz, f"unknown time zone {tz}")] if bad else []


def _validate_schedule(schedule: Any, time_zone: Any, allow_tz: bool = False) -> list[Cause]:
    path = "spec.schedule"
    if not schedule:
        return [required(path)]
    if not isinstance(schedule, str):
        return [field_invalid(path, schedule, "must be a string")]
    causes: list[Cause] = []
    try:
        parse_schedule(re.sub(r"^(CRON_)?TZ=\S+\s+", "", schedule))
    except ScheduleError as e:
        causes.append(field_invalid(path, schedule, str(e)))
    if "TZ" in schedule and not allow_tz:
        causes.append(field_invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    elif "TZ" in schedule and time_zone is not None:
        causes.append(field_invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
    return causes


class CronJobStrategy(Strategy):
    top_fields = frozenset({"spec", "status"})
    kind = "CronJob"
    plural = "cronjobs"
    group = "batch"
    short_names = ("cj",)
    categories = ("all",)
    subresources = ("status",)
    track_generation = True

    def default_status(self) -> Obj | None:
        return {}

    def _defaults(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("concurrencyPolicy", "Allow")
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)
        jt = spec.get("jobTemplate")
        tmpl = ((jt.get("spec") or {}).get("template")) if isinstance(jt, dict) else None
        if isinstance(tmpl, dict):
            tmpl.setdefault("metadata", {})
            if isinstance(tmpl.get("spec"), dict):
                default_pod_spec(tmpl["spec"])

    def prepare_for_create(self, obj: Obj, ctx: RequestContext) -> None:
        super().prepare_for_create(obj, ctx)
        self._defaults(obj)

    def prepare_for_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> None:
        super().prepare_for_update(obj, old, ctx)
        self._defaults(obj)

    def validate(self, obj: Obj, ctx: RequestContext, allow_tz: bool = False) -> list[Cause]:
        causes: list[Cause] = []
        name = obj.get("metadata", {}).get("name", "")
        if len(name) > MAX_NAME_LENGTH:
            causes.append(field_invalid("metadata.name", name, f"must be no more than {MAX_NAME_LENGTH} characters"))
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [*causes, required("spec")]
        causes += _validate_schedule(spec.get("schedule"), spec.get("timeZone"), allow_tz)
        causes += _validate_time_zone(spec.get("timeZone"))
        policy = spec.get("concurrencyPolicy")
        if policy not in _CONCURRENCY:
            causes.append(not_supported("spec.concurrencyPolicy", policy or "", _CONCURRENCY))
        for key in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
            causes += nonnegative(spec, key, "spec")
        jt = spec.get("jobTemplate")
        if not isinstance(jt, dict):
            return [*causes, required("spec.jobTemplate")]
        causes += validate_job_spec(jt.get("spec"), "spec.jobTemplate.spec")
        return causes

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        """A schedule that already used TZ= (created before the rule) may keep it."""
        return self.validate(obj, ctx, allow_tz="TZ" in str((old.get("spec") or {}).get("schedule", "")))

    def table_columns(self) -> list[Obj]:
        return [
            NAME_COL,
            col("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
            col("Timezone", "string", "The time zone name for the given schedule."),
            col("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions."),
            col("Active", "integer", "A list of pointers to currently running jobs."),
            col("Last Schedule", "string", "Information when was the last time the job was successfully scheduled."),
            AGE_COL,
            col("Containers", "string", "Names of each container in the template.", priority=1),
            col("Images", "string", "Images referenced by each container in the template.", priority=1),
            col("Selector", "string", "A label query over pods that should match the pod count.", priority=1),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        import datetime as dt

        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
        containers = ((job_spec.get("template") or {}).get("spec") or {}).get("containers") or []
        last = parse_time(status.get("lastScheduleTime"))
        suspend = spec.get("suspend")
        return [
            obj["metadata"].get("name", ""),
            spec.get("schedule", ""),
            spec.get("timeZone") or "<none>",
            "<unset>" if suspend is None else ("True" if suspend else "False"),
            len(status.get("active") or []),
            "<none>" if last is None else human_duration((dt.datetime.now(dt.UTC) - last).total_seconds()),
            age(obj),
            ",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers),
            selector_string(job_spec.get("selector")),
        ]
