"""The CRI container log format (`<RFC3339Nano> <stdout|stderr> <F|P> <content>`) and the kubelet's log options on it.

What real kubelets read from /var/log/pods/…/N.log (containerd and CRI-O write it): each line carries the time it was
written, so `kubectl logs --timestamps`, `--since` and `--since-time` can be answered. `CriLogWriter` turns a
container's output into such lines (a line longer than 16 KiB is split into `P` partial lines, as runtimes do);
`render` applies the kubelet's ReadLogs options (since, tail, timestamps, limitBytes) to a file's lines. Lines that are
not CRI lines (a log written raw) pass through unchanged: no time, so `since` keeps them and `timestamps` adds nothing.
For the log writer (pod runtime) and the /containerLogs handler (`kubelet.logs`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["CriLine", "CriLogWriter", "format_time", "parse_line", "render"]

#: Runtimes split longer lines into partial ones (containerd's default max container log line size).
MAX_LINE = 16 * 1024

_LINE = re.compile(rb"^(\S+) (stdout|stderr) ([FP])(?: (.*))?$", re.DOTALL)


def format_time(t: dt.datetime) -> str:
    """RFC 3339 with nanoseconds in UTC, as Go's time.RFC3339Nano prints it (trailing zeros of the fraction dropped)."""
    t = t.astimezone(dt.UTC)
    frac = f"{t.microsecond:06d}000".rstrip("0")
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + "Z"


def _parse_time(raw: str) -> dt.datetime | None:
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", raw)
    if not m:
        return None
    base = dt.datetime.fromisoformat(m.group(1) + ("+00:00" if m.group(3) == "Z" else m.group(3)))
    micro = int((m.group(2) or "0")[:6].ljust(6, "0"))
    return base.replace(microsecond=micro).astimezone(dt.UTC)


@dataclass(frozen=True)
class CriLine:
    """One line of a log file: time (None for a raw line), stream, partial flag, content (without the newline)."""

    time: dt.datetime | None
    stream: str
    partial: bool
    content: bytes


def parse_line(line: bytes) -> CriLine:
    """A file line (with or without its newline) → CriLine; a line that is not CRI is raw stdout content."""
    body = line[:-1] if line.endswith(b"\n") else line
    m = _LINE.match(body)
    if m:
        when = _parse_time(m.group(1).decode("ascii", "replace"))
        if when is not None:
            return CriLine(when, m.group(2).decode(), m.group(3) == b"P", m.group(4) or b"")
    return CriLine(None, "stdout", False, body)


class CriLogWriter:
    """A container's output (chunks of stdout and stderr) → CRI lines, each stamped when its end was written."""

    def __init__(self) -> None:
        self._pending: dict[str, bytes] = {"stdout": b"", "stderr": b""}

    def write(self, stream: str, data: bytes, now: dt.datetime | None = None) -> bytes:
        """The file bytes for `data` written to `stream` at `now`; an unfinished line waits for its end."""
        stamp = format_time(now or dt.datetime.now(dt.UTC)).encode()
        buf = self._pending[stream] + data
        out = []
        while True:
            nl = buf.find(b"\n")
            if nl < 0 or nl > MAX_LINE:
                if len(buf) >= MAX_LINE:  # too long for one line: a partial line, the rest follows
                    out.append(b"%s %s P %s\n" % (stamp, stream.encode(), buf[:MAX_LINE]))
                    buf = buf[MAX_LINE:]
                    continue
                break
            out.append(b"%s %s F %s\n" % (stamp, stream.encode(), buf[:nl]))
            buf = buf[nl + 1 :]
        self._pending[stream] = buf
        return b"".join(out)

    def flush(self, now: dt.datetime | None = None) -> bytes:
        """At the container's exit: unfinished lines as final lines (the runtime writes them with F)."""
        stamp = format_time(now or dt.datetime.now(dt.UTC)).encode()
        out = [b"%s %s F %s\n" % (stamp, s.encode(), rest) for s, rest in self._pending.items() if rest]
        self._pending = {"stdout": b"", "stderr": b""}
        return b"".join(out)


def render(
    lines: Iterable[bytes],
    *,
    since: dt.datetime | None = None,
    tail: int | None = None,
    timestamps: bool = False,
    limit_bytes: int | None = None,
) -> Iterator[bytes]:
    """The kubelet's ReadLogs over a file's lines: drop lines before `since`, keep the last `tail` lines, prefix each
    line with its time when `timestamps` (`<RFC3339Nano> <content>`), stop after `limit_bytes` bytes."""
    kept: list[CriLine] = []
    for raw in lines:
        line = parse_line(raw)
        if since is not None and line.time is not None and line.time < since:
            continue
        kept.append(line)
    if tail is not None:
        kept = _last_lines(kept, tail)
    sent = 0
    for line in kept:
        text = line.content + (b"" if line.partial else b"\n")
        if timestamps and line.time is not None:
            text = format_time(line.time).encode() + b" " + text
        if limit_bytes is not None:
            text = text[: max(0, limit_bytes - sent)]
        if not text:
            return
        sent += len(text)
        yield text


def _last_lines(lines: list[CriLine], n: int) -> list[CriLine]:
    """The last `n` full lines (a line split into partials counts once)."""
    if n <= 0:
        return []
    count, start = 0, len(lines)
    for i in range(len(lines) - 1, -1, -1):
        if not lines[i].partial:
            if count == n:
                break
            count += 1
        start = i
    return lines[start:]
