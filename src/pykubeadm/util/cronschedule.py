"""CronJob schedules as the cronjob controller reads them (robfig/cron's ParseStandard), on top of `cronsim`.

Accepted: the standard five fields (minute hour day-of-month month day-of-week, names like MON/JAN, ranges, steps,
lists), the descriptors `@yearly` `@annually` `@monthly` `@weekly` `@daily` `@midnight` `@hourly` and `@every
<duration>`, and an optional `CRON_TZ=<zone>` or `TZ=<zone>` prefix (what the controller prepends for `spec.timeZone`).
`most_recent_unmet` is kube's getMostRecentScheduleTime: the latest schedule time in (earliest, now], and how many there
were (capped), so the controller can start it or report `TooManyMissedTimes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from cronsim import CronSim, CronSimError

from pykubeadm.util.goduration import parse_duration

__all__ = ["DESCRIPTORS", "Schedule", "ScheduleError", "load_zone", "most_recent_unmet", "parse_schedule"]

#: robfig/cron's descriptors → five-field expressions.
DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

#: More missed start times than this are reported (kube's TooManyMissedTimes threshold).
MAX_MISSED = 100


class ScheduleError(ValueError):
    """An unparseable schedule or an unknown time zone (the text is what the controller puts in its event)."""


def load_zone(name: str) -> tzinfo:
    """The IANA zone `name` (`Local` and `UTC` as Go's time.LoadLocation); ScheduleError if unknown."""
    if name in ("", "UTC"):
        return UTC
    if name == "Local":
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only for a named zone: not every apiserver start's cost

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ScheduleError(f"unknown time zone {name}") from err


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: a cron expression evaluated in `zone`, or a constant `every` delay."""

    expr: str
    zone: tzinfo
    every: timedelta | None = None

    def next_after(self, t: datetime) -> datetime | None:
        """The first activation strictly after `t` (an aware datetime), in UTC; None if there is none."""
        if self.every is not None:
            return (t + self.every - timedelta(microseconds=t.microsecond)).astimezone(UTC)
        local = t.astimezone(self.zone).replace(second=0, microsecond=0)
        try:
            return next(CronSim(self.expr, local)).astimezone(UTC)
        except StopIteration:
            return None

    def last_at_or_before(self, t: datetime) -> datetime | None:
        """The latest activation at or before `t` (None if none within cronsim's search window)."""
        if self.every is not None:
            return None
        local = t.astimezone(self.zone).replace(microsecond=0) + timedelta(seconds=1)
        try:
            return next(CronSim(self.expr, local, reverse=True)).astimezone(UTC)
        except StopIteration:
            return None


def parse_schedule(schedule: str, time_zone: str | None = None) -> Schedule:
    """Parse `schedule` (with `spec.timeZone` if set, which wins as `TZ=` prefixed by the controller)."""
    text = schedule.strip()
    zone: tzinfo = UTC
    if time_zone is not None:
        text = f"TZ={time_zone} {text}"
    if text.startswith(("TZ=", "CRON_TZ=")):
        prefix, _, text = text.partition(" ")
        zone = load_zone(prefix.split("=", 1)[1])
        text = text.strip()
    if text.startswith("@every "):
        try:
            delay = parse_duration(text.removeprefix("@every ").strip())
        except ValueError as err:
            raise ScheduleError(f"failed to parse duration {text}: {err}") from err
        delay = max(timedelta(seconds=1), timedelta(seconds=int(delay.total_seconds())))
        return Schedule(text, zone, every=delay)
    if text.startswith("@"):
        if text not in DESCRIPTORS:
            raise ScheduleError(f"unrecognized descriptor: {text}")
        text = DESCRIPTORS[text]
    fields = text.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: {text}")
    try:
        CronSim(" ".join(fields), datetime(2000, 1, 1))
    except CronSimError as err:
        raise ScheduleError(str(err)) from err
    return Schedule(" ".join(fields), zone)


def most_recent_unmet(schedule: Schedule, earliest: datetime, now: datetime) -> tuple[datetime | None, int]:
    """(the latest activation in (earliest, now], the number of activations in that window up to MAX_MISSED + 1)."""
    first = schedule.next_after(earliest)
    if first is None or first > now:
        return None, 0
    if schedule.every is not None:
        count = int((now - first) / schedule.every) + 1
        return first + (count - 1) * schedule.every, min(count, MAX_MISSED + 1)
    latest = schedule.last_at_or_before(now)
    if latest is None or latest < first:
        latest = first
    count, t = 1, first
    while count <= MAX_MISSED:
        nxt = schedule.next_after(t)
        if nxt is None or nxt > now:
            break
        count, t = count + 1, nxt
    return latest, count
