"""/healthz, /livez, /readyz with `?verbose`, `?exclude=` and per-check paths, in kube-apiserver's text format."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

Check = Callable[[], Awaitable[str | None]]  # None = ok, else the failure reason (withheld from the body)


async def run_checks(request: web.Request, endpoint: str, checks: dict[str, Check], only: str = "") -> web.Response:
    headers = {"X-Content-Type-Options": "nosniff"}
    if only:
        check = checks.get(only)
        if check is None:
            return web.Response(status=404, text="404 page not found\n", content_type="text/plain")
        err = await check()
        if err is None:
            return web.Response(text="ok", content_type="text/plain", charset="utf-8", headers=headers)
        return web.Response(
            status=500,
            text=f"internal server error: {only} check failed\n",
            content_type="text/plain",
            charset="utf-8",
            headers=headers,
        )
    excluded = set(request.query.getall("exclude", []))
    lines, failed = [], False
    for name, check in checks.items():
        if name in excluded:
            lines.append(f"[+]{name} excluded: ok")
            continue
        err = await check()
        if err is None:
            lines.append(f"[+]{name} ok")
        else:
            failed = True
            lines.append(f"[-]{name} failed: reason withheld")
    unknown = sorted(excluded - set(checks))
    if unknown:
        lines.append(
            "warn: some health checks cannot be excluded: no matches for " + ",".join(f'"{u}"' for u in unknown)
        )
    if failed:
        lines.append(f"{endpoint} check failed")
        return web.Response(
            status=500, text="\n".join(lines) + "\n", content_type="text/plain", charset="utf-8", headers=headers
        )
    if "verbose" in request.query:
        lines.append(f"{endpoint} check passed")
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain", charset="utf-8", headers=headers)
    return web.Response(text="ok", content_type="text/plain", charset="utf-8", headers=headers)
