"""DELETE handlers: one object (DeleteOptions from the body or the query) and deletecollection."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.codec import (
    add_warnings,
    decode_protobuf_body,
    json_response,
    media_type,
    parse_json_or_yaml,
    read_raw,
)
from pykubeadm.apiserver.handlers.context import admit_of, ctx_of, info_of
from pykubeadm.apiserver.handlers.read import selectors
from pykubeadm.apiserver.registry import Store

__all__ = ["delete", "delete_collection", "delete_options"]


async def delete_options(request: web.Request) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    data = await read_raw(request)
    if data.strip():
        if media_type(request) == "application/vnd.kubernetes.protobuf":
            body = decode_protobuf_body(data)
        else:
            body = parse_json_or_yaml(data, "application/json")
        if not isinstance(body, dict):
            raise st.bad_request("DeleteOptions must be an object")
        opts.update(body)
    q = request.query
    if "gracePeriodSeconds" in q:
        try:
            opts["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
        except ValueError:
            raise st.bad_request("gracePeriodSeconds must be an integer") from None
    if "propagationPolicy" in q:
        opts["propagationPolicy"] = q["propagationPolicy"]
    if "orphanDependents" in q:
        opts["orphanDependents"] = q["orphanDependents"].lower() in ("true", "1")
    if opts.get("propagationPolicy") not in (None, "", "Orphan", "Background", "Foreground"):
        raise st.invalid(
            "DeleteOptions",
            "",
            "",
            [
                st.Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: "{opts["propagationPolicy"]}": '
                    'supported values: "Foreground", "Background", "Orphan"',
                    "propagationPolicy",
                )
            ],
        )
    if "All" in (opts.get("dryRun") or []):
        opts["_dry"] = True
    return opts


async def delete(request: web.Request, store: Store) -> web.Response:
    info = info_of(request)
    if info.subresource:
        raise st.method_not_allowed()
    opts = await delete_options(request)
    ctx = ctx_of(request, dry=True if opts.get("_dry") else None)
    obj, removed = await store.delete(info.namespace, info.name, ctx, opts, admit_of(request, store))
    # kube's DeleteResource: 202 only when the object stays and orphanDependents=false was asked for explicitly; an
    # object kept by finalizers or a grace period is answered as it now is (deletionTimestamp set), 200.
    code = 202 if not removed and opts.get("orphanDependents") is False else 200
    warnings = store.strategy.warnings_on_delete(opts)
    if removed and not store.strategy.return_deleted_object:
        uid = obj["metadata"].get("uid", "")
        return add_warnings(json_response(st.status_success(store.plural, store.group, info.name, uid)), warnings)
    return add_warnings(json_response(obj, status=code), warnings)


async def delete_collection(request: web.Request, store: Store) -> web.Response:
    info = info_of(request)
    opts = await delete_options(request)
    ctx = ctx_of(request, dry=True if opts.get("_dry") else None)
    labels, fields = selectors(request, store)
    page = await store.list(info.namespace or None, labels, fields)
    items = []
    for obj in page.items:
        meta = obj["metadata"]
        try:
            deleted, _ = await store.delete(
                meta.get("namespace", ""), meta["name"], ctx, opts, admit_of(request, store)
            )
        except st.ApiError as e:
            if e.code == 404:
                continue
            raise
        deleted.pop("kind", None)
        deleted.pop("apiVersion", None)
        items.append(deleted)
    return json_response(
        {
            "kind": store.strategy.kind + "List",
            "apiVersion": store.strategy.api_version,
            "metadata": {"resourceVersion": page.resource_version},
            "items": items,
        }
    )
