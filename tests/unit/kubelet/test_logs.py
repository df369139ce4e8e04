"""Tail offsets of container log files (the kubelet's tailLines)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykubeadm.kubelet.logs import tail_offset


@pytest.mark.parametrize(
    ("content", "lines", "expected"),
    [
        (b"a\nb\nc\n", 1, b"c\n"),
        (b"a\nb\nc\n", 2, b"b\nc\n"),
        (b"a\nb\nc\n", 5, b"a\nb\nc\n"),
        (b"a\nb\nc", 1, b"c"),  # a last line without its newline yet
        (b"a\nb\nc\n", 0, b""),
        (b"", 3, b""),
    ],
)
def test_tail_offset(tmp_path: Path, content: bytes, lines: int, expected: bytes) -> None:
    path = tmp_path / "0.log"
    path.write_bytes(content)
    assert content[tail_offset(path, lines) :] == expected


def test_tail_offset_across_read_blocks(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    body = b"".join(b"line %06d %s\n" % (i, b"x" * 100) for i in range(3000))  # ~330 KB: several 64 KiB blocks
    path.write_bytes(body)
    tail = body[tail_offset(path, 1500) :].splitlines()
    assert len(tail) == 1500 and tail[0].startswith(b"line 001500")
