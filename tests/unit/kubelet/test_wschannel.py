"""The kubelet's WebSocket channel protocol for exec/attach (v5 and v4) on a loopback server, with real commands:
channel bytes, stdin half-close (v5 CLOSE channel), resize JSON, the Status on the error channel, and the errors a
client gets before the upgrade (unknown pod, no command, no upgrade)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest
from aiohttp import web

from pykubeadm.kubelet.streaming import add_streaming_routes
from pykubeadm.streaming.remotecommand import exit_status
from pykubeadm.streaming.wsserve import parse_resize
from pykubeadm.testing.webapp import serve_app


@dataclass
class Ref:
    pid: int | None
    env: dict[str, str]
    cwd: str | None
    log_path: Path
    pod_ip: str = "127.0.0.1"
    enter_prefix: list[str] = field(default_factory=list)
    stdin: asyncio.StreamWriter | None = None


@pytest.fixture
async def base(tmp_path: Path) -> AsyncIterator[str]:
    ref = Ref(
        os.getpid(), {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "WHO": "ctr"}, str(tmp_path), tmp_path / "l"
    )

    def locate(namespace: str, pod: str, container: str) -> Ref | str:
        return (
            ref
            if (namespace, pod, container) == ("ns", "p", "c")
            else f'pod "{pod}" in namespace "{namespace}" not found'
        )

    app = web.Application()
    add_streaming_routes(app.router, locate)
    async with serve_app(app) as url:
        yield url


async def _session(url: str, protocol: str, send: list[bytes]) -> dict[int, bytes]:
    """Run one exec session; the bytes received per channel."""
    got: dict[int, bytes] = {}
    async with aiohttp.ClientSession() as s, s.ws_connect(url, protocols=[protocol]) as ws:
        assert ws.protocol == protocol
        for m in send:
            await ws.send_bytes(m)
        async with asyncio.timeout(20):
            async for msg in ws:
                assert msg.type == aiohttp.WSMsgType.BINARY
                got[msg.data[0]] = got.get(msg.data[0], b"") + msg.data[1:]
    return got


async def test_v5_channels_stdin_close_and_exit_code(base: str) -> None:
    script = "echo $WHO; cat; echo err >&2; exit 7"
    query = urlencode([("command", "sh"), ("command", "-c"), ("command", script), ("input", "1"), ("output", "1")])
    url = f"{base}/exec/ns/p/c?{query}&error=1"
    got = await _session(url, "v5.channel.k8s.io", [b"\x00line\n", b"\xff\x00"])  # stdin data, then CLOSE stdin
    assert got[1] == b"ctr\nline\n"
    assert got[2] == b"err\n"
    status = json.loads(got[3])
    assert status["status"] == "Failure" and status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "7"}]


async def test_stdin_in_text_messages_is_answered_while_the_session_stays_open(base: str) -> None:
    """The official Python client sends a str given to write_stdin as a text message, channel first ("\\x00...")."""
    query = urlencode([("command", "sh"), ("input", "1"), ("output", "1")])
    async with (
        aiohttp.ClientSession() as s,
        s.ws_connect(f"{base}/exec/ns/p/c?{query}", protocols=["v5.channel.k8s.io"]) as ws,
    ):
        for i in range(3):
            await ws.send_str(f"\x00echo text {i}\n")
            async with asyncio.timeout(20):
                msg = await ws.receive()
            assert msg.type == aiohttp.WSMsgType.BINARY and msg.data == f"\x01text {i}\n".encode()
        await ws.send_bytes(b"\xff\x00")  # CLOSE stdin: sh reads EOF and exits 0
        async with asyncio.timeout(20):
            msg = await ws.receive()
        assert msg.data[0] == 3 and json.loads(msg.data[1:])["status"] == "Success"


async def test_v4_success_status(base: str, tmp_path: Path) -> None:
    got = await _session(f"{base}/exec/ns/p/c?command=pwd&output=1", "v4.channel.k8s.io", [])
    assert got[1].decode().strip() == str(tmp_path)  # the container's working directory
    assert json.loads(got[3]) == {"metadata": {}, "status": "Success"}


async def test_tty_gets_the_size_from_the_resize_channel(base: str) -> None:
    url = f"{base}/exec/ns/p/c?command=stty&command=size&output=1&tty=1"
    got = await _session(url, "v5.channel.k8s.io", [b"\x04" + json.dumps({"Width": 120, "Height": 40}).encode()])
    assert got[1].strip() == b"40 120"
    assert json.loads(got[3])["status"] == "Success"


async def test_errors_before_the_upgrade(base: str) -> None:
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{base}/exec/ns/other/c?command=true&output=1") as r:
            assert r.status == 404 and 'pod "other" in namespace "ns" not found' in await r.text()
        async with s.post(f"{base}/exec/ns/p/c?output=1") as r:
            assert r.status == 400 and "you must specify at least 1 command" in await r.text()
        async with s.post(f"{base}/exec/ns/p/c?command=true") as r:
            assert r.status == 400 and "at least 1 of stdin, stdout, stderr" in await r.text()
        async with s.post(f"{base}/exec/ns/p/c?command=true&output=1") as r:
            assert r.status == 400 and "Upgrade request required" in await r.text()


def test_exit_status_shapes() -> None:
    assert exit_status(["true"], 0) == {"metadata": {}, "status": "Success"}
    failed = exit_status(["sh", "-c", "exit 3"], 3)
    assert failed["reason"] == "NonZeroExitCode" and failed["details"]["causes"][0] == {
        "reason": "ExitCode",
        "message": "3",
    }


def test_parse_resize() -> None:
    assert parse_resize(b'{"Width":80,"Height":24}') == (80, 24)
    assert parse_resize(b"nonsense") is None


@pytest.mark.parametrize("tty", ["0", "1"])
async def test_a_client_that_goes_away_stops_its_command(base: str, tty: str) -> None:
    query = urlencode([("command", "sh"), ("command", "-c"), ("command", "echo $$; exec sleep 100"), ("output", "1")])
    async with (
        aiohttp.ClientSession() as s,
        s.ws_connect(f"{base}/exec/ns/p/c?{query}&tty={tty}", protocols=["v5.channel.k8s.io"]) as ws,
    ):
        async with asyncio.timeout(20):
            msg = await ws.receive()
        pid = int(msg.data[1:].decode().strip())
    # the connection is closed: the kubelet kills what the session started
    async with asyncio.timeout(20):
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            await asyncio.sleep(0.05)
