"""metav1.Time and MicroTime text: the forms kube writes, and lenient parsing of what the API returns."""

from datetime import UTC, datetime, timedelta, timezone

from pykubeadm.util.apitime import format_micro_time, format_time, now_micro_time, now_time, parse_time


def test_formats_are_kubes() -> None:
    t = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert format_time(t) == "2026-01-02T03:04:05Z"
    assert format_micro_time(t) == "2026-01-02T03:04:05.678901Z"
    # another zone is converted, a naive time is UTC
    assert format_time(t.astimezone(timezone(timedelta(hours=2)))) == "2026-01-02T03:04:05Z"
    assert format_time(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z"


def test_now_round_trips() -> None:
    for text in (now_time(), now_micro_time()):
        parsed = parse_time(text)
        assert parsed is not None and abs((datetime.now(UTC) - parsed).total_seconds()) < 60


def test_parse_is_lenient_and_always_aware() -> None:
    assert parse_time("2026-01-02T03:04:05Z") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert parse_time("2026-01-02T03:04:05.5+01:00") == datetime(2026, 1, 2, 2, 4, 5, 500000, tzinfo=UTC)
    assert parse_time("2026-01-02T03:04:05z") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert parse_time("2026-01-02T03:04:05") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    for zero in (None, "", "not a time"):
        assert parse_time(zero) is None
