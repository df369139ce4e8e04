"""The `/debug/pprof/` answers of the control-plane components' --profiling (kube's net/http/pprof), in Python's
terms: `goroutine` lists every thread's and every asyncio task's stack, `cmdline` the command line; the index lists
them; any other profile is Go's 404 `Unknown profile`. Callers decide who may see them (authorization) and whether
they are served at all."""

from __future__ import annotations

import asyncio
import io
import sys
import threading
import traceback

from aiohttp import web

__all__ = ["PROFILES", "pprof_response"]

PROFILES = {
    "goroutine": "Stack traces of all current threads and asyncio tasks",
    "cmdline": "The command line invocation of the current program",
}


def _index() -> web.Response:
    rows = "".join(f'<tr><td><a href="{n}?debug=1">{n}</a></td><td>{d}</td></tr>\n' for n, d in PROFILES.items())
    html = (
        "<html><head><title>/debug/pprof/</title></head><body>\n/debug/pprof/\n<p>Set debug=1 as a query parameter "
        f"to export in legacy text format</p>\n<table>{rows}</table>\n</body></html>\n"
    )
    return web.Response(text=html, content_type="text/html")


def _stacks() -> str:
    out = io.StringIO()
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        out.write(f"thread {ident} [{names.get(ident, '?')}]:\n")
        out.write("".join(traceback.format_stack(frame)))
        out.write("\n")
    try:
        tasks = asyncio.all_tasks()
    except RuntimeError:
        tasks = set()
    for task in sorted(tasks, key=lambda t: t.get_name()):
        out.write(f"task {task.get_name()}:\n")
        for frame in task.get_stack():
            out.write("".join(traceback.format_stack(frame, limit=1)))
        out.write("\n")
    return out.getvalue()


def pprof_response(name: str) -> web.Response:
    """The answer for `/debug/pprof/<name>` ("" = the index)."""
    if not name:
        return _index()
    if name == "goroutine":
        return web.Response(text=_stacks(), content_type="text/plain")
    if name == "cmdline":
        return web.Response(text="\x00".join(sys.argv), content_type="text/plain")
    return web.Response(status=404, text="Unknown profile\n", content_type="text/plain")
