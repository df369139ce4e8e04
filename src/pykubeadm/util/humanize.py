"""Human-readable durations as Kubernetes prints them; used by `certs check-expiration` and `token list`.

`short_human_duration` is k8s.io/apimachinery's duration.ShortHumanDuration (the RESIDUAL TIME and TTL columns).
"""

from __future__ import annotations

from datetime import timedelta

__all__ = ["short_human_duration"]


def short_human_duration(d: timedelta) -> str:
    """k8s.io/apimachinery duration.ShortHumanDuration."""
    seconds = int(d.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 24:
        return f"{hours}h"
    if hours < 24 * 365:
        return f"{hours // 24}d"
    return f"{int(hours / 24 / 365)}y"
