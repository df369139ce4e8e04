"""The CRI log format: what the writer puts in a log file and how the kubelet's log options read it back."""

from __future__ import annotations

import datetime as dt

from pykubeadm.kubelet.crilog import MAX_LINE, CriLogWriter, format_time, parse_line, render

T0 = dt.datetime(2026, 11, 25, 14, 0, 0, 123456, tzinfo=dt.UTC)


def test_time_format_is_rfc3339nano_in_utc() -> None:
    assert format_time(T0) == "2026-11-25T14:00:00.123456Z"
    assert format_time(T0.replace(microsecond=500000)) == "2026-11-25T14:00:00.5Z"
    assert format_time(T0.replace(microsecond=0)) == "2026-11-25T14:00:00Z"
    cet = dt.timezone(dt.timedelta(hours=1))
    assert format_time(dt.datetime(2026, 1, 1, 1, 0, tzinfo=cet)) == "2026-01-01T00:00:00Z"


def test_writer_stamps_complete_lines_and_keeps_the_rest() -> None:
    w = CriLogWriter()
    assert w.write("stdout", b"one\ntw", T0) == b"2026-11-25T14:00:00.123456Z stdout F one\n"
    assert w.write("stderr", b"err\n", T0) == b"2026-11-25T14:00:00.123456Z stderr F err\n"
    assert w.write("stdout", b"o\n", T0) == b"2026-11-25T14:00:00.123456Z stdout F two\n"
    assert w.write("stdout", b"tail", T0) == b""
    assert w.flush(T0) == b"2026-11-25T14:00:00.123456Z stdout F tail\n"


def test_long_lines_become_partial_lines() -> None:
    out = CriLogWriter().write("stdout", b"x" * (MAX_LINE + 10) + b"\n", T0)
    first, second = out.splitlines()
    assert first.split(b" ", 3)[2] == b"P" and len(first.split(b" ", 3)[3]) == MAX_LINE
    assert second.split(b" ", 3)[2:] == [b"F", b"x" * 10]
    assert b"".join(render(out.splitlines(keepends=True))) == b"x" * (MAX_LINE + 10) + b"\n"


def test_parse_cri_and_raw_lines() -> None:
    line = parse_line(b"2026-11-25T14:00:00.123456789Z stderr F hello world\n")
    assert (line.time, line.stream, line.partial, line.content) == (T0, "stderr", False, b"hello world")
    assert parse_line(b"2026-11-25T14:00:00Z stdout F \n").content == b""
    raw = parse_line(b"plain output\n")
    assert (raw.time, raw.stream, raw.content) == (None, "stdout", b"plain output")


def _file(*entries: tuple[int, str]) -> list[bytes]:
    w = CriLogWriter()
    return [w.write("stdout", text.encode() + b"\n", T0 + dt.timedelta(seconds=s)) for s, text in entries]


def test_render_since_tail_timestamps_limit() -> None:
    lines = _file((0, "a"), (10, "b"), (20, "c"))
    assert b"".join(render(lines)) == b"a\nb\nc\n"
    assert b"".join(render(lines, since=T0 + dt.timedelta(seconds=5))) == b"b\nc\n"
    assert b"".join(render(lines, tail=2)) == b"b\nc\n"
    assert b"".join(render(lines, tail=0)) == b""
    stamped = b"".join(render(lines, tail=1, timestamps=True))
    assert stamped == b"2026-11-25T14:00:20.123456Z c\n"
    assert b"".join(render(lines, limit_bytes=3)) == b"a\nb"
    assert (
        b"".join(render([b"raw line\n", *lines[:1]], timestamps=True)) == b"raw line\n2026-11-25T14:00:00.123456Z a\n"
    )


def test_tail_counts_a_split_line_once() -> None:
    w = CriLogWriter()
    lines = w.write("stdout", b"first\n" + b"y" * (MAX_LINE + 1) + b"\n", T0).splitlines(keepends=True)
    assert len(lines) == 3
    assert b"".join(render(lines, tail=1)) == b"y" * (MAX_LINE + 1) + b"\n"
