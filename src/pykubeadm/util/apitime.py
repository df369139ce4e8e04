"""The API's timestamp text forms: metav1.Time (RFC 3339, second precision, `Z`) and metav1.MicroTime (6 fractional
digits, `Z`), formatting and lenient parsing, shared by the controllers, the kubelet and the apiserver.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["format_micro_time", "format_time", "now_micro_time", "now_time", "parse_time"]


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def format_time(t: datetime) -> str:
    """metav1.Time: `2006-01-02T15:04:05Z` in UTC (a naive datetime is taken as UTC)."""
    return _utc(t).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(t: datetime) -> str:
    """metav1.MicroTime: `2006-01-02T15:04:05.000000Z` in UTC (a naive datetime is taken as UTC)."""
    return _utc(t).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_time() -> str:
    """The current time as metav1.Time text."""
    return format_time(datetime.now(UTC))


def now_micro_time() -> str:
    """The current time as metav1.MicroTime text."""
    return format_micro_time(datetime.now(UTC))


def parse_time(value: str | None) -> datetime | None:
    """An RFC 3339 timestamp from the API, always aware (None when absent, empty or unparseable: a "zero" time)."""
    if not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)
