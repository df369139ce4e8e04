"""The one aiohttp route: non-resource paths (discovery, health, version, openapi) and resource verbs → handlers."""

from __future__ import annotations

from aiohttp import web

from pykubeadm.apiserver import discovery
from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.aggregator import discovery as agg_discovery
from pykubeadm.apiserver.aggregator import maybe_proxy
from pykubeadm.apiserver.handlers import delete as delete_h
from pykubeadm.apiserver.handlers import eviction, nodeproxy, podlog, read, review, scale, watch, write
from pykubeadm.apiserver.handlers import patch as patch_h
from pykubeadm.apiserver.handlers.codec import encode_json, json_response
from pykubeadm.apiserver.handlers.context import info_of, state_of
from pykubeadm.apiserver.handlers.negotiation import negotiate_output
from pykubeadm.apiserver.health import run_checks
from pykubeadm.apiserver.registry import Strategy
from pykubeadm.apiserver.state import ApiState

__all__ = ["handle"]

_HEALTH = {"healthz", "livez", "readyz"}
_STREAMED = frozenset({"log", "exec", "attach", "portforward", "proxy"})
#: The keys of podconnect.CONNECT_SUBRESOURCES: podconnect (and its SPDY/WebSocket streaming) is imported on the first
#: exec/attach/portforward, not at every apiserver start.
_CONNECT = frozenset({"exec", "attach", "portforward"})


async def handle(request: web.Request) -> web.StreamResponse:
    info = info_of(request)
    agg = state_of(request).aggregator
    if agg is not None and agg.remote:
        remote = await maybe_proxy(request, agg, info)
        if remote is not None:
            return remote
    if not info.is_resource:
        return await _non_resource(request)
    if info.subresource not in _STREAMED:  # logs and connections answer in their own media types
        negotiate_output(request, streaming=info.verb == "watch")
    state = state_of(request)
    key = (info.api_group, info.api_version, info.resource)
    store = state.stores.get(key)
    if store is None and state.crds is not None and "." in info.api_group:
        store = await state.crds.resolve(*key)  # a CRD created a moment ago
    if store is None:
        virtual = state.virtual.get(key)
        if virtual is not None and info.verb == "create" and not info.name:
            return await review.create_review(request, virtual)
        raise st.not_found_path()
    if info.name and not store.strategy.namespaced and info.resource != "namespaces" and info.namespace:
        raise st.not_found_path()
    if store.strategy.namespaced and not info.namespace and info.verb not in ("list", "watch"):
        raise st.not_found_path()
    verb = info.verb
    if info.subresource:
        if info.resource == "serviceaccounts" and info.subresource == "token" and verb == "create":
            return await review.create_token(request, store)
        if info.resource == "pods" and info.subresource == "binding" and verb == "create":
            return await review.create_binding(request, store)
        if info.resource == "pods" and info.subresource == "eviction":
            if verb != "create":
                raise st.method_not_allowed()
            return await eviction.create_eviction(request, store)
        if info.resource == "pods" and info.subresource == "log":
            if verb != "get":
                raise st.method_not_allowed()
            return await podlog.pod_log(request, store)
        if info.resource == "nodes" and info.subresource == "proxy" and not info.api_group:
            return await nodeproxy.node_proxy(request, store)
        if info.resource == "pods" and info.subresource in _CONNECT:
            from pykubeadm.apiserver.handlers import podconnect

            return await podconnect.pod_connect(request, store)
        scalable = "scale" in store.strategy.subresources
        if info.subresource == "scale" and scalable and verb in ("get", "update", "patch"):
            return await scale.scale(request, store)
        if info.subresource not in store.strategy.subresources or info.subresource == "binding":
            raise st.not_found_path()
        if verb not in ("get", "update", "patch"):
            raise st.method_not_allowed()
    if verb == "get":
        return await read.get(request, store)
    if verb == "list":
        return await read.list_(request, store)
    if verb == "watch":
        return await watch.watch(request, store)
    if verb == "create":
        if info.name:
            if info.resource == "pods" and info.subresource == "binding":
                return await review.create_binding(request, store)
            raise st.method_not_allowed()
        return await write.create(request, store)
    if verb == "update":
        if not info.name:
            raise st.method_not_allowed()
        return await write.update(request, store)
    if verb == "patch":
        if not info.name:
            raise st.method_not_allowed()
        return await patch_h.patch(request, store)
    if verb == "delete":
        return await delete_h.delete(request, store)
    if verb == "deletecollection":
        if info.resource == "namespaces":
            raise st.method_not_allowed()
        return await delete_h.delete_collection(request, store)
    raise st.method_not_allowed()


def _custom(state: ApiState) -> list[Strategy]:
    """Kinds registered at run time (CustomResourceDefinitions' versions), for discovery."""
    return [s.strategy for s in state.stores.values() if getattr(s.strategy, "custom", False)]


async def _non_resource(request: web.Request) -> web.StreamResponse:
    state = state_of(request)
    path = request.path.rstrip("/") or "/"
    parts = path.strip("/").split("/")
    if request.method not in ("GET", "HEAD"):
        raise st.method_not_allowed()
    if path == "/version":
        return json_response(state.version_info)
    if path == "/metrics":
        from pykubeadm.apiserver.metrics import serve_metrics

        return serve_metrics(request)
    if parts[0] in _HEALTH and len(parts) <= 2:
        checks = state.health_checks.get(parts[0], {})
        return await run_checks(request, parts[0], checks, parts[1] if len(parts) == 2 else "")
    if path in ("/api", "/apis"):
        agg = discovery.aggregated_version(request.headers.get("Accept", ""))
        if agg is not None:
            doc = discovery.aggregated(path == "/api", agg, _custom(state))
            body = encode_json(doc if path == "/api" else agg_discovery.extend_aggregated(doc, state.aggregator))
            ctype = f"application/json;g=apidiscovery.k8s.io;v={agg};as={discovery.AGGREGATED_AS}"
            return web.Response(body=body, headers={"Content-Type": ctype})
        if path == "/api":
            return json_response(discovery.api_versions(request.host))
        return json_response(agg_discovery.extend_api_groups(discovery.api_groups(_custom(state)), state.aggregator))
    if parts[0] == "api" and len(parts) == 2:
        core_resources = discovery.api_resource_list("", parts[1], _custom(state))
        if core_resources is not None:
            return json_response(core_resources)
    if parts[0] == "apis" and len(parts) == 2:
        group = discovery.api_group(parts[1], _custom(state))
        if group is not None:
            return json_response(group)
    if parts[0] == "apis" and len(parts) == 3:
        resources = discovery.api_resource_list(parts[1], parts[2], _custom(state))
        if resources is not None:
            return json_response(resources)
    if parts[0] == "debug" and state.profiling:
        from pykubeadm.apiserver.handlers.profiling import serve_profiling

        return await serve_profiling(request, path)
    if parts[0] == "openapi":
        from pykubeadm.apiserver.openapi.handler import serve_openapi

        return await serve_openapi(request, state, path)
    if path == "/":
        paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version", "/metrics"]
        paths += ["/openapi/v2", "/openapi/v3"]
        paths += [f"/apis/{g}/{v}" for g, vs in discovery.group_versions(_custom(state)).items() if g for v in vs]
        paths = agg_discovery.extend_paths(paths, state.aggregator)
        return json_response({"paths": sorted(paths)})
    raise st.not_found_path()
