"""Audit middleware: audit.k8s.io/v1 Events as kube-apiserver's WithAudit filter emits them, at the level and stages
the audit Policy gives each request (apiserver/audit/policy.py), into a backend (apiserver/audit/logbackend.py).

Stages: RequestReceived (as the request arrives, after authentication), ResponseStarted (long-running requests —
watches, exec/attach/portforward/log/proxy — once their headers are sent), ResponseComplete, Panic (an unexpected
error). Levels: Metadata (who, what, when, the answer's status), Request (+ the request body as requestObject),
RequestResponse (+ the response body as responseObject). The event's `auditID` is the request's `Audit-Id` response
header; authorization adds the `authorization.k8s.io/decision` and `/reason` annotations. Credentials never appear:
headers are not logged and bodies only at the levels the policy asks for.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.admission import recorder
from pykubeadm.apiserver.audit.policy import Decision, Policy, RequestAttrs, catch_all_policy
from pykubeadm.apiserver.authn.reviews import user_info_dict
from pykubeadm.apiserver.flowcontrol import audit_id
from pykubeadm.apiserver.handlers.codec import RAW_BODY_KEY, decode_protobuf_body, media_type
from pykubeadm.apiserver.handlers.context import IMPERSONATOR_KEY, INFO_KEY, USER_KEY
from pykubeadm.apiserver.middleware.maxinflight import is_long_running

__all__ = [
    "AUTHZ_DECISION_KEY",
    "Auditor",
    "audit_failed_authentication",
    "audit_middleware",
    "audit_response_started",
]

log = logging.getLogger("pykubeadm.apiserver.audit")

Sink = Callable[[dict[str, Any]], None]

#: (decision, reason) of the authorization filter: "allow" or "forbid" and the authorizer's reason.
AUTHZ_DECISION_KEY = web.RequestKey("authz_decision", tuple)
_BODY_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


_second: list[Any] = [None, ""]  # the last whole second formatted, and its text


def _micro(t: float) -> str:
    """MicroTime text (`2006-01-02T15:04:05.000000Z`); the seconds part is formatted once per second."""
    sec = int(t)
    if _second[0] != sec:
        _second[0], _second[1] = sec, datetime.fromtimestamp(sec, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{_second[1]}.{int((t - sec) * 1_000_000):06d}Z"


@dataclass
class Auditor:
    """The policy and the backend; a plain callable sink is audited with the catch-all Metadata policy."""

    policy: Policy
    sink: Sink

    @classmethod
    def of(cls, sink: Auditor | Sink | None) -> Auditor | None:
        if sink is None or isinstance(sink, Auditor):
            return sink
        return cls(catch_all_policy(), sink)

    def emit(self, event: dict[str, Any]) -> None:
        try:
            self.sink(event)
        except Exception:
            log.exception("audit backend failed")


@dataclass
class _Ctx:
    auditor: Auditor
    decision: Decision
    received: float
    base: dict[str, Any] = field(default_factory=dict)


_CTX_KEY = web.RequestKey("audit_ctx", _Ctx)


def _user(user: Any) -> dict[str, Any]:
    return {} if user is None else user_info_dict(user)


def _attrs(request: web.Request) -> RequestAttrs:
    info = request.get(INFO_KEY)
    user = request.get(IMPERSONATOR_KEY) or request.get(USER_KEY)
    name, groups = (user.name, tuple(user.groups)) if user is not None else ("", ())
    if info is None:
        return RequestAttrs(name, groups, request.method.lower(), False, request.path)
    return RequestAttrs(
        name,
        groups,
        info.verb,
        info.is_resource,
        info.path,
        info.namespace,
        info.api_group,
        info.resource,
        info.subresource,
        info.name,
    )


def _base(request: web.Request, level: str, received: float) -> dict[str, Any]:
    info = request.get(INFO_KEY)
    event: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": level,
        "auditID": audit_id(request),
        "stage": "",
        "requestURI": request.path_qs,  # query strings carry no secrets in the Kubernetes API
        "verb": info.verb if info else request.method.lower(),
        "user": _user(request.get(IMPERSONATOR_KEY) or request.get(USER_KEY)),
    }
    if request.get(IMPERSONATOR_KEY) is not None:
        event["impersonatedUser"] = _user(request.get(USER_KEY))
    event["sourceIPs"] = [request.remote or ""]
    event["userAgent"] = request.headers.get("User-Agent", "")
    if info and info.is_resource:
        ref: dict[str, Any] = {"resource": info.resource}
        if info.namespace:
            ref["namespace"] = info.namespace
        if info.name:
            ref["name"] = info.name
        if info.api_group:
            ref["apiGroup"] = info.api_group
        ref["apiVersion"] = info.api_version
        if info.subresource:
            ref["subresource"] = info.subresource
        event["objectRef"] = ref
    event["requestReceivedTimestamp"] = _micro(received)
    return event


def _stage(ctx: _Ctx, stage: str, **extra: Any) -> None:
    if stage in ctx.decision.omit_stages:
        return
    event = dict(ctx.base)
    event["stage"] = stage
    event.update(extra)
    event["stageTimestamp"] = _micro(time.time())
    ctx.auditor.emit(event)


def _strip_managed_fields(obj: Any) -> Any:
    if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) and "managedFields" in obj["metadata"]:
        obj = dict(obj)
        obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    if isinstance(obj, dict) and isinstance(obj.get("items"), list):
        obj = dict(obj)
        obj["items"] = [_strip_managed_fields(i) for i in obj["items"]]
    return obj


def _request_object(request: web.Request) -> Any:
    raw = request.get(RAW_BODY_KEY)
    if not raw:
        return None
    mt = media_type(request)
    try:
        if mt == "application/vnd.kubernetes.protobuf":
            return decode_protobuf_body(raw)
        if mt in ("application/yaml", "application/apply-patch+yaml"):
            from pykubeadm.util.yamlload import load_yaml

            return load_yaml(raw)
        return orjson.loads(raw)
    except Exception:
        return None


def _response_status(code: int, status: dict[str, Any] | None = None) -> dict[str, Any]:
    if status is None or status.get("kind") != "Status":
        return {"metadata": {}, "code": code}
    out = {k: v for k, v in status.items() if k not in ("kind", "apiVersion")}
    out["code"] = code
    return out


def _annotations(request: web.Request) -> dict[str, str] | None:
    """The event's annotations: the authorizer's decision and reason, then what admission recorded (webhooks'
    and policies' audit annotations, Pod Security's)."""
    ann: dict[str, str] = {}
    decision = request.get(AUTHZ_DECISION_KEY)
    if decision is not None:
        ann["authorization.k8s.io/decision"] = decision[0]
        if decision[1]:
            ann["authorization.k8s.io/reason"] = decision[1]
    if (record := recorder.current()) is not None and record.annotations:
        ann.update(record.annotations)
    return ann or None


def _long_running(request: web.Request) -> bool:
    info = request.get(INFO_KEY)
    return info is not None and is_long_running(info)


async def audit_response_started(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare hook: the ResponseStarted event of a long-running request."""
    ctx = request.get(_CTX_KEY)
    if ctx is None or not _long_running(request):
        return
    extra: dict[str, Any] = {"responseStatus": _response_status(response.status)}
    ann = _annotations(request)
    if ann:
        extra["annotations"] = ann
    _stage(ctx, "ResponseStarted", **extra)


def audit_failed_authentication(auditor: Auditor | None, request: web.Request, has_client_cert: bool) -> None:
    """The audit event of a 401 from the authentication filter (kube's WithFailedAuthenticationAudit): no user, stage
    ResponseStarted, the attempted methods as the status message."""
    if auditor is None:
        return
    decision = auditor.policy.evaluate(lambda: _attrs(request))
    if decision.level == "None" or "ResponseStarted" in decision.omit_stages:
        return
    now = time.time()
    event = _base(request, decision.level, now)
    event["stage"] = "ResponseStarted"
    event["user"] = {}
    event["responseStatus"] = {"metadata": {}, "message": _auth_methods(request, has_client_cert), "code": 401}
    event["stageTimestamp"] = _micro(now)
    auditor.emit(event)


def _auth_methods(request: web.Request, has_client_cert: bool) -> str:
    """kube's getAuthMethods: which credentials a request that failed authentication carried."""
    methods = []
    auth = request.headers.get("Authorization", "").strip()
    if auth[:6].lower() == "basic ":
        methods.append("basic")
    parts = auth.split(" ")
    if len(parts) > 1 and parts[0].lower() == "bearer":
        methods.append("bearer")
    if has_client_cert:
        methods.append("x509")
    if methods:
        return "Authentication failed, attempted: " + ", ".join(methods)
    return "Authentication failed, no credentials provided"


def audit_middleware(auditor: Auditor | None) -> Middleware:
    @web.middleware
    async def audit(request: web.Request, handler: Handler) -> web.StreamResponse:
        if auditor is None:
            return await handler(request)
        decision = auditor.policy.evaluate(lambda: _attrs(request))
        if decision.level == "None":
            return await handler(request)
        received = time.time()
        ctx = _Ctx(auditor, decision, received, _base(request, decision.level, received))
        request[_CTX_KEY] = ctx
        _stage(ctx, "RequestReceived")
        stage = "ResponseComplete"
        status: dict[str, Any] = {"metadata": {}, "code": 500}  # a cancelled request
        resp: web.StreamResponse | None = None
        try:
            resp = await handler(request)
            body = resp.body if isinstance(resp, web.Response) else None
            parsed = None
            if resp.status >= 400 and isinstance(body, bytes) and body[:1] == b"{":
                try:
                    parsed = orjson.loads(body)
                except orjson.JSONDecodeError:
                    parsed = None
            status = _response_status(resp.status, parsed)
            return resp
        except st.ApiError as e:
            status = _response_status(e.code, e.to_status())
            raise
        except web.HTTPException as e:
            status = _response_status(e.status)
            raise
        except Exception as e:
            code = getattr(e, "code", None)
            if isinstance(code, int) and callable(getattr(e, "status", None)):  # the auth package's StatusError
                status = _response_status(code, e.status())  # type: ignore[attr-defined]
            else:
                stage = "Panic"
                status = {
                    "metadata": {},
                    "status": "Failure",
                    "message": f"APIServer panic'd: {type(e).__name__}",
                    "reason": "InternalError",
                    "code": 500,
                }
            raise
        finally:
            extra: dict[str, Any] = {"responseStatus": status}
            _add_objects(request, ctx, extra, resp)
            ann = _annotations(request)
            if ann:
                extra["annotations"] = ann
            _stage(ctx, stage, **extra)

    return audit


def _add_objects(request: web.Request, ctx: _Ctx, extra: dict[str, Any], resp: web.StreamResponse | None) -> None:
    level = ctx.decision.level
    info = request.get(INFO_KEY)
    if info is None or not info.is_resource:
        return
    if level == "Metadata":
        if info.verb == "create" and "name" not in ctx.base.get("objectRef", {}):
            obj = _request_object(request)
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            name = meta.get("name") if isinstance(meta, dict) else None  # a malformed body is refused later, not here
            if name:
                ctx.base["objectRef"] = {**ctx.base["objectRef"], "name": name}
                extra["objectRef"] = ctx.base["objectRef"]
        return
    omit = ctx.decision.omit_managed_fields
    if info.verb in _BODY_VERBS:
        obj = _request_object(request)
        if obj is not None:
            extra["requestObject"] = _strip_managed_fields(obj) if omit else obj
    if (
        level == "RequestResponse"
        and isinstance(resp, web.Response)
        and isinstance(resp.body, bytes)
        and resp.content_type == "application/json"
        and resp.body[:1] == b"{"
    ):
        try:
            obj = orjson.loads(resp.body)
        except orjson.JSONDecodeError:
            return
        extra["responseObject"] = _strip_managed_fields(obj) if omit else obj
