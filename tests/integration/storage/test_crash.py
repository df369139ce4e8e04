"""kill -9 in the middle of a stream of writes: after a restart every acknowledged write is there (both engines).

The writer is a separate process printing each acknowledged revision; for etcd the etcd member is killed with it."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

WRITER = Path(__file__).with_name("writer_proc.py")


async def test_kill_9_keeps_acknowledged_writes(backend, ns: str) -> None:  # type: ignore[no-untyped-def]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(WRITER), backend.url, ns, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    acks: list[tuple[int, str, str]] = []
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line == b"READY\n", line + (await proc.stderr.read() if proc.stderr else b"")
        while len(acks) < 400:
            line = await asyncio.wait_for(proc.stdout.readline(), 15)
            assert line, "writer exited early"
            _, rev, key, value = line.decode().split()
            acks.append((int(rev), key, value))
        # mid-stream: kill the writer (and the etcd member under it) without warning
        os.kill(proc.pid, signal.SIGKILL)
        if backend.cluster is not None:
            for m in backend.cluster.members:
                m.kill()
        rest = await proc.stdout.read()  # acks already printed before the kill count too
        for raw in rest.decode().splitlines():
            parts = raw.split()
            if len(parts) == 4 and parts[0] == "ACK":
                acks.append((int(parts[1]), parts[2], parts[3]))
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()

    backend.restart(kill=True)
    store = await backend.open()
    try:
        final = {kv.key: kv for kv in (await store.list(ns)).items}
        last: dict[str, tuple[int, str]] = {}
        for rev, key, value in acks:
            if rev > last.get(key, (0, ""))[0]:
                last[key] = (rev, value)
        missing = []
        for key, (rev, value) in last.items():
            kv = final.get(key)
            # an update in flight at the kill may have landed without its ack: never older than the last ack
            if kv is None or kv.mod_revision < rev or (kv.mod_revision == rev and kv.value.decode() != value):
                missing.append((key, rev, value, kv))
        assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:3]}"
        assert await store.current_revision() >= max(r for r, _, _ in acks)
    finally:
        await store.close()
