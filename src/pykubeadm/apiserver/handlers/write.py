"""POST and PUT handlers: create in a collection, replace an object or one of its subresources."""

from __future__ import annotations

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.codec import add_warnings, decode_body, field_validation, json_response
from pykubeadm.apiserver.handlers.context import admit_of, ctx_of, info_of
from pykubeadm.apiserver.registry import Store

__all__ = ["create", "update"]


async def create(request: web.Request, store: Store) -> web.Response:
    info = info_of(request)
    s = store.strategy
    obj = await decode_body(request, s.kind, s.api_version)
    ns = info.namespace
    meta = obj.setdefault("metadata", {})
    if s.namespaced:
        body_ns = meta.get("namespace")
        if body_ns and body_ns != ns:
            raise st.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
    warnings = field_validation(request, s, obj)
    created = await store.create(ns, obj, ctx_of(request), admit_of(request, store))
    return add_warnings(json_response(created, status=201), warnings)


async def update(request: web.Request, store: Store) -> web.Response:
    info = info_of(request)
    s = store.strategy
    if info.subresource and info.subresource not in s.subresources:
        raise st.not_found_path()
    obj = await decode_body(request, s.kind, s.api_version)
    meta = obj.setdefault("metadata", {})
    if s.namespaced and meta.get("namespace") and meta["namespace"] != info.namespace:
        raise st.bad_request("the namespace of the provided object does not match the namespace sent on the request")
    if meta.get("name") and meta["name"] != info.name:
        raise st.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({info.name})"
        )
    warnings = field_validation(request, s, obj)
    result, created = await store.update(
        info.namespace, info.name, lambda old: obj, ctx_of(request), info.subresource, admit_of(request, store)
    )
    return add_warnings(json_response(result, status=201 if created else 200), warnings)
