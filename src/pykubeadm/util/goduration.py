"""Go's time.Duration text form: `time.ParseDuration` and `Duration.String()` (`24h0m0s`, `1.5s`, `300ms`), used by
kubeadm's config API and by the components' duration flags.
"""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ["format_duration", "parse_duration"]

_UNITS_US = {"ns": 0.001, "us": 1, "µs": 1, "μs": 1, "ms": 1000, "s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000}
_NUMBER = re.compile(r"\d+\.?\d*|\.\d+")


def parse_duration(text: str) -> timedelta:
    """Parse a Go duration string (`24h0m0s`, `1.5h`, `300ms`, `-2m`, `0`) like time.ParseDuration."""
    s = text.strip()
    orig = s
    sign = 1
    if s[:1] in "+-" and s:
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return timedelta(0)
    if not s:
        raise ValueError(f'time: invalid duration "{orig}"')
    pos = 0
    total_us = 0.0
    while pos < len(s):
        m = _NUMBER.match(s, pos)
        if not m:
            raise ValueError(f'time: invalid duration "{orig}"')
        pos = m.end()
        unit_end = pos
        while unit_end < len(s) and s[unit_end] not in "0123456789.":
            unit_end += 1
        unit = s[pos:unit_end]
        if not unit:
            raise ValueError(f'time: missing unit in duration "{orig}"')
        if unit not in _UNITS_US:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{orig}"')
        total_us += float(m.group(0)) * _UNITS_US[unit]
        pos = unit_end
    return timedelta(microseconds=sign * round(total_us))


def _fmt_frac(value: int, scale: int) -> str:
    """value/scale with Go's trailing-zero-trimmed fraction."""
    whole, frac = divmod(value, scale)
    if not frac:
        return str(whole)
    digits = len(str(scale)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


def format_duration(d: timedelta) -> str:
    """Format like Go's time.Duration.String(): `24h0m0s`, `4m0s`, `1.5s`, `300ms`, `0s`."""
    us = d // timedelta(microseconds=1)
    if us == 0:
        return "0s"
    neg = us < 0
    us = abs(us)
    if us < 1_000_000:
        out = f"{_fmt_frac(us, 1000)}ms" if us >= 1000 else f"{us}µs"
    else:
        hours, rest = divmod(us, 3_600_000_000)
        minutes, rest = divmod(rest, 60_000_000)
        secs = _fmt_frac(rest, 1_000_000) + "s"
        if hours:
            out = f"{hours}h{minutes}m{secs}"
        elif minutes:
            out = f"{minutes}m{secs}"
        else:
            out = secs
    return "-" + out if neg else out
