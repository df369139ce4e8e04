"""The audit middleware's stages for failures: an ApiError is a ResponseComplete with its Status, an unexpected error
is the Panic stage with kube's InternalError status; a policy level of None emits nothing."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.audit.policy import parse_policy
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.flowcontrol import on_response_prepare
from pykubeadm.apiserver.handlers.context import INFO_KEY, USER_KEY
from pykubeadm.apiserver.middleware.audit import Auditor, audit_middleware
from pykubeadm.apiserver.middleware.recovery import recovery_middleware
from pykubeadm.apiserver.requestinfo import RequestInfo


def _app(events: list[dict[str, Any]]) -> web.Application:
    policy = parse_policy(
        {
            "apiVersion": "audit.k8s.io/v1",
            "kind": "Policy",
            "rules": [
                {"level": "None", "nonResourceURLs": ["/quiet"]},
                {"level": "Request", "resources": [{"group": "", "resources": ["configmaps"]}]},
                {"level": "Metadata"},
            ],
        }
    )

    @web.middleware
    async def identify(request: web.Request, handler: Any) -> web.StreamResponse:
        request[USER_KEY] = UserInfo("alice", groups=("system:authenticated",))
        if request.path.startswith("/api/"):
            request[INFO_KEY] = RequestInfo(
                request.path, "get", True, "api", "", "v1", "default", "configmaps", "", "c"
            )
        else:
            request[INFO_KEY] = RequestInfo(request.path, "get", False)
        return await handler(request)

    async def missing(request: web.Request) -> web.Response:
        raise st.not_found("configmaps", "", "c")

    async def boom(request: web.Request) -> web.Response:
        raise RuntimeError("boom")

    async def quiet(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application(
        middlewares=[recovery_middleware(), identify, audit_middleware(Auditor(policy, events.append))]
    )
    app.router.add_get("/api/v1/namespaces/default/configmaps/c", missing)
    app.router.add_get("/boom", boom)
    app.router.add_get("/quiet", quiet)
    app.on_response_prepare.append(on_response_prepare)  # the Audit-Id header
    return app


async def test_failure_stages() -> None:
    events: list[dict[str, Any]] = []
    async with TestClient(TestServer(_app(events))) as client:
        r = await client.get("/api/v1/namespaces/default/configmaps/c")
        assert r.status == 404
        audit_id = r.headers.get("Audit-Id")
        r = await client.get("/boom")
        assert r.status == 500
        r = await client.get("/quiet")
        assert r.status == 200
    assert [(e["requestURI"], e["stage"]) for e in events] == [
        ("/api/v1/namespaces/default/configmaps/c", "RequestReceived"),
        ("/api/v1/namespaces/default/configmaps/c", "ResponseComplete"),
        ("/boom", "RequestReceived"),
        ("/boom", "Panic"),
    ]
    nf = events[1]
    assert nf["level"] == "Request" and nf["responseStatus"]["code"] == 404
    assert nf["responseStatus"]["reason"] == "NotFound" and nf["responseStatus"]["status"] == "Failure"
    assert "kind" not in nf["responseStatus"]
    assert nf["objectRef"] == {"resource": "configmaps", "namespace": "default", "name": "c", "apiVersion": "v1"}
    assert audit_id and nf["auditID"] == audit_id
    panic = events[3]
    assert panic["level"] == "Metadata" and panic["user"] == {"username": "alice", "groups": ["system:authenticated"]}
    assert panic["responseStatus"] == {
        "metadata": {},
        "status": "Failure",
        "message": "APIServer panic'd: RuntimeError",
        "reason": "InternalError",
        "code": 500,
    }
