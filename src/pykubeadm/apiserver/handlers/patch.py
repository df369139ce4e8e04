"""PATCH handler: JSON patch, merge patch, strategic merge patch and server-side apply (create-or-merge)."""

from __future__ import annotations

import dataclasses
from typing import Any

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.codec import (
    add_warnings,
    field_validation,
    json_response,
    media_type,
    parse_json_or_yaml,
    query_bool,
    read_raw,
)
from pykubeadm.apiserver.handlers.context import admit_of, ctx_of, info_of
from pykubeadm.apiserver.patching import (
    PatchError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from pykubeadm.apiserver.patching.managedfields import FieldManager, apply_configuration
from pykubeadm.apiserver.registry import Store

__all__ = ["APPLY", "APPLY_CBOR", "JSON_PATCH", "MERGE", "PATCH_TYPES", "STRATEGIC", "patch"]

JSON_PATCH = "application/json-patch+json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
APPLY_CBOR = "application/apply-patch+cbor"
PATCH_TYPES = [JSON_PATCH, MERGE, STRATEGIC, APPLY]


async def patch(request: web.Request, store: Store) -> web.Response:
    info = info_of(request)
    s = store.strategy
    if info.subresource and info.subresource not in s.subresources:
        raise st.not_found_path()
    mt = media_type(request)
    if mt not in PATCH_TYPES:
        raise st.unsupported_media_type(mt, PATCH_TYPES)
    data = await read_raw(request)
    body = parse_json_or_yaml(data, mt)
    if mt == APPLY:
        manager = request.query.get("fieldManager", "")
        if not manager:
            raise st.bad_request(
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
            )
        if not isinstance(body, dict):
            raise st.bad_request("error decoding YAML: the apply patch must be an object")
        if body.get("kind") and body["kind"] != s.kind:
            raise st.bad_request(f"the kind in the apply patch ({body['kind']}) does not match the resource ({s.kind})")
        name = (body.get("metadata") or {}).get("name")
        if name and name != info.name:
            raise st.bad_request(f"the name of the object ({name}) does not match the name on the URL ({info.name})")
    elif mt == JSON_PATCH:
        if not isinstance(body, list):
            raise st.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    elif not isinstance(body, dict):
        raise st.bad_request("the patch must be a JSON object")

    warnings: list[str] = []

    def transform(old: dict[str, Any] | None) -> dict[str, Any]:
        base = old if old is not None else {}
        base_meta = base.get("metadata")
        meta: dict[str, Any] = base_meta if isinstance(base_meta, dict) else {}
        stored_rv = meta.get("resourceVersion")
        if mt != JSON_PATCH:
            # The stored resourceVersion is a precondition only when the patch itself sets one.
            meta.pop("resourceVersion", None)
        try:
            if mt == JSON_PATCH:
                new = apply_json_patch(base, body)
                nmeta = new.get("metadata") if isinstance(new, dict) else None
                if isinstance(nmeta, dict) and nmeta.get("resourceVersion") == stored_rv:
                    nmeta.pop("resourceVersion", None)
            elif mt == MERGE:
                new = apply_merge_patch(base, body)
            elif mt == APPLY:  # the configuration is checked, then merged with managedFields and conflicts
                warnings[:] = field_validation(request, s, body)
                fm = FieldManager(request.query.get("fieldManager", ""), s.api_version, info.subresource)
                return apply_configuration(s, old, body, fm, force=query_bool(request, "force"))
            else:
                new = apply_strategic_merge_patch(base, body, s.kind)
        except PatchError as e:
            raise st.ApiError(422, "Invalid", str(e)) from None
        except ValueError as e:
            raise st.bad_request(str(e)) from None
        if not isinstance(new, dict):
            raise st.bad_request("the patched object is not a JSON object")
        warnings[:] = field_validation(request, s, new)
        return new

    if mt != APPLY and await store.try_get(info.namespace, info.name) is None:
        raise st.not_found(store.plural, store.group, info.name)

    ctx = ctx_of(request)
    if mt == APPLY:
        ctx = dataclasses.replace(ctx, operation="Apply")
    result, created = await store.update(
        info.namespace,
        info.name,
        transform,
        ctx,
        info.subresource,
        admit_of(request, store),
        create_if_missing=(mt == APPLY and not info.subresource),
    )
    return add_warnings(json_response(result, status=201 if created else 200), warnings)
