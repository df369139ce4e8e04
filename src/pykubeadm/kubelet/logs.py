"""The kubelet's /containerLogs/{namespace}/{pod}/{container} endpoint: a container's log file (tail, byte limit,
the previous instance, follow) streamed as text/plain, as `kubectl logs` gets it through the API server.

Log files are /var/log/pods/<namespace>_<pod>_<uid>/<container>/<restartCount>.log, as the kubelet's runtime writes
them, in the CRI format (`crilog`). Query parameters are the real kubelet's: `tailLines`, `limitBytes`, `previous`,
`follow`, `timestamps`, `sinceSeconds`, `sinceTime` (RFC 3339); lines are rendered by `crilog.render` (content only,
or `<RFC3339Nano> <content>` with timestamps; a raw line passes through as written).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from pykubeadm.kubelet.crilog import render

__all__ = ["LogLocator", "container_logs_handler", "tail_offset"]

#: (namespace, pod, container, previous) → the log file, or an error message (pod/container unknown).
LogLocator = Callable[[str, str, str, bool], "Path | str"]

_FOLLOW_POLL = 0.2
_CHUNK = 64 * 1024


def tail_offset(path: Path, lines: int) -> int:
    """The byte offset where the last `lines` lines of `path` start."""
    size = path.stat().st_size
    if lines <= 0:
        return size
    with path.open("rb") as f:
        pos, found = size, 0
        while pos > 0:
            step = min(_CHUNK, pos)
            pos -= step
            f.seek(pos)
            block = f.read(step)
            # a final newline ends the last line; it does not start another one
            end = len(block) - 1 if pos + step == size and block.endswith(b"\n") else len(block)
            idx = end
            while True:
                idx = block.rfind(b"\n", 0, idx)
                if idx < 0:
                    break
                found += 1
                if found == lines:
                    return pos + idx + 1
    return 0


def _query_int(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw in (None, ""):
        return None
    try:
        value = int(raw)
    except ValueError:
        raise web.HTTPBadRequest(text=f'invalid value for {name}: "{raw}": must be an integer') from None
    if value < 0:
        raise web.HTTPBadRequest(text=f"{name}: must be greater than or equal to 0")
    return value


def _since(request: web.Request) -> dt.datetime | None:
    seconds = _query_int(request, "sinceSeconds")
    if seconds is not None:
        return dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds)
    raw = request.query.get("sinceTime")
    if not raw:
        return None
    try:
        return dt.datetime.fromisoformat(raw.replace("Z", "+00:00")).astimezone(dt.UTC)
    except ValueError:
        raise web.HTTPBadRequest(text=f'invalid value for sinceTime: "{raw}": must be RFC 3339') from None


def container_logs_handler(locate: LogLocator) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handler(request: web.Request) -> web.StreamResponse:
        ns, pod, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        previous = request.query.get("previous", "").lower() in ("true", "1")
        follow = request.query.get("follow", "").lower() in ("true", "1")
        timestamps = request.query.get("timestamps", "").lower() in ("true", "1")
        tail = _query_int(request, "tailLines")
        limit = _query_int(request, "limitBytes")
        since = _since(request)
        found = locate(ns, pod, container, previous)
        if isinstance(found, str):
            raise web.HTTPNotFound(text=found)
        path = found
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)  # not started yet: an empty log so far
            path.touch()
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await resp.prepare(request)
        sent = 0

        async def send(lines: list[bytes]) -> bool:
            """Render and send complete lines; False once limitBytes is reached."""
            nonlocal sent
            left = None if limit is None else limit - sent
            for text in render(lines, since=since, timestamps=timestamps, limit_bytes=left):
                await resp.write(text)
                sent += len(text)
            return limit is None or sent < limit

        with path.open("rb") as f:
            f.seek(tail_offset(path, tail) if tail is not None else 0)  # the last tailLines lines of the file
            pending = b""
            while True:
                chunk = f.read(_CHUNK)
                if chunk:
                    pending += chunk
                    cut = pending.rfind(b"\n") + 1
                    lines, pending = pending[:cut].splitlines(keepends=True), pending[cut:]
                    if not await send(lines):
                        break
                    continue
                if not follow or previous:
                    if pending:
                        await send([pending])
                    break
                if request.transport is None or request.transport.is_closing():
                    return resp  # the client went away (aiohttp does not cancel the handler)
                await asyncio.sleep(_FOLLOW_POLL)
        await resp.write_eof()
        return resp

    return handler
