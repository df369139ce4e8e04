"""GET handlers: get one object and list a collection (plain JSON, a `Table` for `kubectl get`, or metadata only)."""

from __future__ import annotations

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.codec import (
    PARTIAL,
    PARTIAL_LIST,
    TABLE,
    json_response,
    partial_metadata,
    partial_metadata_list,
    query_int,
    to_table,
    transform_of,
)
from pykubeadm.apiserver.handlers.context import info_of
from pykubeadm.apiserver.registry import Store
from pykubeadm.apiserver.selectors import FieldSelector, LabelSelector, parse_field_selector, parse_label_selector

__all__ = ["get", "list_", "selectors"]


async def get(request: web.Request, store: Store) -> web.Response:
    info = info_of(request)
    transform = transform_of(request, "get")
    obj = await store.get(info.namespace, info.name)
    if info.subresource and info.subresource not in ("status", "approval"):
        raise st.not_found_path()
    if transform == TABLE:
        return json_response(
            to_table(request, store.strategy, [obj], {"resourceVersion": obj["metadata"]["resourceVersion"]})
        )
    if transform == PARTIAL:
        return json_response(partial_metadata(obj))
    return json_response(obj)


def selectors(request: web.Request, store: Store) -> tuple[LabelSelector, FieldSelector]:
    labels = parse_label_selector(request.query.get("labelSelector"))
    fields = parse_field_selector(request.query.get("fieldSelector"), store.strategy.supports_field)
    return labels, fields


async def list_(request: web.Request, store: Store) -> web.Response:
    info = info_of(request)
    transform = transform_of(request, "list")
    labels, fields = selectors(request, store)
    limit = query_int(request, "limit")
    if limit < 0:
        limit = 0
    at = 0
    match = request.query.get("resourceVersionMatch", "")
    if match:
        if match not in ("Exact", "NotOlderThan"):
            raise st.bad_request(
                f'resourceVersionMatch: Unsupported value: "{match}": supported values: "Exact", "NotOlderThan"'
            )
        rv = request.query.get("resourceVersion", "")
        if not rv:
            raise st.bad_request("resourceVersionMatch is forbidden unless resourceVersion is provided")
        if match == "Exact":
            try:
                at = int(rv)
            except ValueError:
                raise st.bad_request(f'invalid resource version "{rv}"') from None
    page = await store.list(info.namespace or None, labels, fields, limit, request.query.get("continue", ""), at)
    meta: dict = {"resourceVersion": page.resource_version}
    if page.continue_token:
        meta["continue"] = page.continue_token
        if page.remaining is not None:
            meta["remainingItemCount"] = page.remaining
    if transform == TABLE:
        return json_response(to_table(request, store.strategy, page.items, meta))
    if transform == PARTIAL_LIST:
        return json_response(partial_metadata_list(page.items, meta))
    for item in page.items:
        item.pop("kind", None)
        item.pop("apiVersion", None)
    body = {
        "kind": store.strategy.kind + "List",
        "apiVersion": store.strategy.api_version,
        "metadata": meta,
        "items": page.items,
    }
    return json_response(body)
