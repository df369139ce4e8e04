"""POST pods/<name>/eviction (policy/v1 or v1beta1 Eviction): decode, admit, then registry.eviction.evict."""

from __future__ import annotations

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.codec import decode_body, json_response
from pykubeadm.apiserver.handlers.context import admit_of, ctx_of, info_of, state_of
from pykubeadm.apiserver.registry import Store
from pykubeadm.apiserver.registry.eviction import evict

__all__ = ["create_eviction"]


async def create_eviction(request: web.Request, pods: Store) -> web.Response:
    info = info_of(request)
    try:
        body = await decode_body(request, "Eviction", "policy/v1")
    except st.ApiError:
        body = await decode_body(request, "Eviction", "policy/v1beta1")
    meta = body.setdefault("metadata", {})
    if meta.get("name", "") != info.name:
        raise st.bad_request("name in URL does not match name in Eviction object")
    options = dict(body.get("deleteOptions") or {})
    query_dry = request.query.getall("dryRun", [])
    if query_dry and options.get("dryRun") and list(options["dryRun"]) != query_dry:
        raise st.bad_request(
            f"Non-matching dry-run options in request and content: {query_dry} and {options['dryRun']}"
        )
    dry = "All" in (options.get("dryRun") or query_dry)
    ctx = ctx_of(request, dry=dry)
    admit = admit_of(request, pods)
    if admit is not None:
        await admit("CREATE", body, None)
    pdbs = state_of(request).store("poddisruptionbudgets.policy")
    result = await evict(pods, pdbs, info.namespace, info.name, options, ctx)
    return json_response(result, status=201)
