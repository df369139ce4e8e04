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


async def test_container_logs_render_cri_lines_with_timestamps_since_tail_and_limit(tmp_path: Path) -> None:
    import datetime as dt

    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    from pykubeadm.kubelet.crilog import format_time
    from pykubeadm.kubelet.logs import container_logs_handler

    now = dt.datetime.now(dt.UTC)
    old, recent = format_time(now - dt.timedelta(hours=2)), format_time(now - dt.timedelta(seconds=5))
    path = tmp_path / "0.log"
    path.write_bytes(
        f"{old} stdout F old line\n{recent} stderr F new err\n{recent} stdout P par\n{recent} stdout F tial\n".encode()
    )
    app = web.Application()
    app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", container_logs_handler(lambda *_: path))
    client = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()

    async def get(**params: str) -> str:
        resp = await client.get("/containerLogs/ns/p/c", params=params)
        assert resp.status == 200
        return await resp.text()

    try:
        assert await get() == "old line\nnew err\npartial\n"
        assert await get(timestamps="true") == f"{old} old line\n{recent} new err\n{recent} par{recent} tial\n"
        assert await get(sinceSeconds="3600") == "new err\npartial\n"
        assert await get(sinceTime=format_time(now - dt.timedelta(minutes=1))) == "new err\npartial\n"
        assert await get(tailLines="1") == "tial\n"  # the file's last line, as the kubelet counts
        assert await get(limitBytes="12") == "old line\nnew"
    finally:
        await client.close()


async def test_following_a_cri_log_sends_each_new_line_as_it_is_written(tmp_path: Path) -> None:
    import asyncio
    import datetime as dt

    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    from pykubeadm.kubelet.crilog import CriLogWriter
    from pykubeadm.kubelet.logs import container_logs_handler

    path = tmp_path / "0.log"
    writer = CriLogWriter()
    path.write_bytes(writer.write("stdout", b"first\n"))
    app = web.Application()
    app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", container_logs_handler(lambda *_: path))
    client = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    try:
        resp = await client.get("/containerLogs/ns/p/c", params={"follow": "true", "timestamps": "true"})
        assert (await asyncio.wait_for(resp.content.readline(), 10)).endswith(b"Z first\n")
        with path.open("ab") as f:
            f.write(writer.write("stderr", b"sec", dt.datetime(2026, 1, 2, 3, 4, 5, 600000, tzinfo=dt.UTC)))
            f.flush()
            f.write(writer.write("stderr", b"ond\n", dt.datetime(2026, 1, 2, 3, 4, 5, 600000, tzinfo=dt.UTC)))
        assert await asyncio.wait_for(resp.content.readline(), 10) == b"2026-01-02T03:04:05.6Z second\n"
        resp.close()
    finally:
        await client.close()
