"""CronJob schedules: five fields, descriptors, @every, time zones, and the most recent unmet schedule time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pykubeadm.controllers.cronjob.controller import job_from_template, job_name
from pykubeadm.util.cronschedule import MAX_MISSED, ScheduleError, most_recent_unmet, parse_schedule


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("schedule", "after", "expected"),
    [
        ("* * * * *", utc(2024, 1, 1, 10, 0, 30), utc(2024, 1, 1, 10, 1)),
        ("*/15 * * * *", utc(2024, 1, 1, 10, 0), utc(2024, 1, 1, 10, 15)),
        ("0 9 * * MON-FRI", utc(2024, 1, 5, 9, 0), utc(2024, 1, 8, 9, 0)),  # Friday 9:00 → Monday
        ("@hourly", utc(2024, 1, 1, 10, 0), utc(2024, 1, 1, 11, 0)),
        ("@daily", utc(2024, 1, 1, 10, 0), utc(2024, 1, 2)),
        ("@weekly", utc(2024, 1, 1), utc(2024, 1, 7)),  # Sundays
        ("@monthly", utc(2024, 1, 15), utc(2024, 2, 1)),
        ("@yearly", utc(2024, 1, 15), utc(2025, 1, 1)),
        ("@every 90s", utc(2024, 1, 1, 10, 0, 0), utc(2024, 1, 1, 10, 1, 30)),
        ("0 0 13 * 5", utc(2024, 1, 1), utc(2024, 1, 5)),  # day-of-month OR day-of-week, as cron does
    ],
)
def test_next_activation(schedule: str, after: datetime, expected: datetime) -> None:
    assert parse_schedule(schedule).next_after(after) == expected


def test_time_zone_field_and_cron_tz_prefix_agree() -> None:
    # 09:00 in Berlin is 08:00 UTC in winter and 07:00 UTC in summer
    winter, summer = utc(2024, 1, 10), utc(2024, 7, 10)
    by_field = parse_schedule("0 9 * * *", "Europe/Berlin")
    by_prefix = parse_schedule("CRON_TZ=Europe/Berlin 0 9 * * *")
    assert by_field.next_after(winter) == by_prefix.next_after(winter) == utc(2024, 1, 10, 8)
    assert by_field.next_after(summer) == utc(2024, 7, 10, 7)
    assert parse_schedule("TZ=UTC 0 9 * * *").next_after(winter) == utc(2024, 1, 10, 9)


@pytest.mark.parametrize(
    "bad", ["", "* * * *", "* * * * * *", "61 * * * *", "@fortnightly", "@every nope", "x * * * *"]
)
def test_unparseable_schedules(bad: str) -> None:
    with pytest.raises(ScheduleError):
        parse_schedule(bad)


def test_unknown_time_zone() -> None:
    with pytest.raises(ScheduleError, match="unknown time zone"):
        parse_schedule("* * * * *", "Mars/Olympus_Mons")


def test_most_recent_unmet_picks_the_latest_and_counts_missed() -> None:
    hourly = parse_schedule("0 * * * *")
    assert most_recent_unmet(hourly, utc(2024, 1, 1, 10, 0), utc(2024, 1, 1, 10, 59)) == (None, 0)
    assert most_recent_unmet(hourly, utc(2024, 1, 1, 10, 0), utc(2024, 1, 1, 13, 30)) == (utc(2024, 1, 1, 13), 3)
    # the earliest time itself was already handled: it is not unmet
    assert most_recent_unmet(hourly, utc(2024, 1, 1, 13, 0), utc(2024, 1, 1, 13, 0, 30)) == (None, 0)


def test_most_recent_unmet_caps_the_count_for_long_outages() -> None:
    minutely = parse_schedule("* * * * *")
    now = utc(2024, 3, 1, 12, 0, 10)
    latest, missed = most_recent_unmet(minutely, now - timedelta(days=30), now)
    assert latest == utc(2024, 3, 1, 12, 0)
    assert missed == MAX_MISSED + 1


def test_job_for_a_schedule_time() -> None:
    cj = {
        "metadata": {"name": "backup", "namespace": "ops", "uid": "u-1"},
        "spec": {
            "jobTemplate": {
                "metadata": {"labels": {"app": "b"}, "annotations": {"x": "y"}},
                "spec": {"backoffLimit": 2, "template": {"spec": {"containers": []}}},
            }
        },
    }
    scheduled = utc(2024, 1, 1, 9, 0)
    job = job_from_template(cj, scheduled, parse_schedule("0 9 * * *", "Europe/Berlin").zone)
    assert job_name("backup", scheduled) == "backup-28401660"
    assert job["metadata"]["name"] == "backup-28401660"
    assert job["metadata"]["labels"] == {"app": "b"}
    assert job["metadata"]["annotations"] == {
        "x": "y",
        "batch.kubernetes.io/cronjob-scheduled-timestamp": "2024-01-01T10:00:00+01:00",
    }
    assert job["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "name": "backup",
            "uid": "u-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert job["spec"]["backoffLimit"] == 2
