"""The `/scale` subresource of Deployments (autoscaling/v1 Scale): `kubectl scale` PATCHes it with a merge patch."""

from __future__ import annotations

import copy
from typing import Any

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.handlers.codec import decode_body, json_response, media_type, parse_json_or_yaml, read_raw
from pykubeadm.apiserver.handlers.context import admit_of, ctx_of, info_of
from pykubeadm.apiserver.patching import PatchError, apply_json_patch, apply_merge_patch
from pykubeadm.apiserver.registry import Store
from pykubeadm.apiserver.registry.workloads import selector_string

__all__ = ["scale", "to_scale"]

Obj = dict[str, Any]


def to_scale(obj: Obj) -> Obj:
    meta = obj["metadata"]
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
        },
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": selector_string((obj.get("spec") or {}).get("selector")).replace("<none>", ""),
        },
    }


async def scale(request: web.Request, store: Store) -> web.Response:
    info = info_of(request)
    if request.method == "GET":
        return json_response(to_scale(await store.get(info.namespace, info.name)))
    if request.method == "PUT":
        body = await decode_body(request, "Scale", "autoscaling/v1")
        new_scale: Obj | None = body
    else:
        mt = media_type(request)
        patch = parse_json_or_yaml(await read_raw(request), mt)
        new_scale = None

    def transform(old: Obj | None) -> Obj:
        assert old is not None
        cur = to_scale(old)
        if new_scale is not None:
            want = new_scale
            rv = (want.get("metadata") or {}).get("resourceVersion")
        else:
            try:
                if mt == "application/json-patch+json":
                    want = apply_json_patch(cur, patch)
                elif mt in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                    want = apply_merge_patch(cur, patch)
                else:
                    raise st.unsupported_media_type(
                        mt,
                        [
                            "application/json-patch+json",
                            "application/merge-patch+json",
                            "application/strategic-merge-patch+json",
                        ],
                    )
            except PatchError as e:
                raise st.ApiError(422, "Invalid", str(e)) from None
            except ValueError as e:
                raise st.bad_request(str(e)) from None
            rv = None
        replicas = (want.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise st.invalid(
                "Scale",
                "autoscaling",
                info.name,
                [
                    st.Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {replicas}: must be greater than or equal to 0",
                        "spec.replicas",
                    )
                ],
            )
        new = copy.deepcopy(old)
        new["metadata"].pop("resourceVersion", None)
        if rv:
            new["metadata"]["resourceVersion"] = rv
        new.setdefault("spec", {})["replicas"] = replicas
        return new

    result, _ = await store.update(info.namespace, info.name, transform, ctx_of(request), "", admit_of(request, store))
    return json_response(to_scale(result))
