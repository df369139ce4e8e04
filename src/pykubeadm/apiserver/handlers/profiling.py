"""--profiling: the apiserver's `/debug/pprof/` paths (util/pprof.py), for users authorized to `get` them (the
authorization filter has already judged the request). Off (`--profiling=false`): not routed, so 404."""

from __future__ import annotations

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.util.pprof import pprof_response

__all__ = ["serve_profiling"]


async def serve_profiling(request: web.Request, path: str) -> web.StreamResponse:
    parts = path.strip("/").split("/")
    if parts[:2] != ["debug", "pprof"] or len(parts) > 3:
        raise st.not_found_path()
    return pprof_response(parts[2] if len(parts) > 2 else "")
