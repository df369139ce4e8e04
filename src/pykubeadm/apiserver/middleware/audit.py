"""Audit middleware: one JSON line per request (who, verb, what, response code, latency); never bodies or credentials."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from pykubeadm.apiserver.admission import recorder
from pykubeadm.apiserver.flowcontrol import audit_id
from pykubeadm.apiserver.handlers.context import IMPERSONATOR_KEY, INFO_KEY, USER_KEY
from pykubeadm.util import jsoncodec

__all__ = ["audit_failed_authentication", "audit_middleware", "line_writer"]

log = logging.getLogger("pykubeadm.apiserver.audit")


def line_writer(stream: TextIO | None = None) -> Callable[[dict[str, Any]], None]:
    out = stream or sys.stderr

    def write(event: dict[str, Any]) -> None:
        out.write(jsoncodec.dumps(event).decode() + "\n")

    return write


def _user(user: Any) -> dict[str, Any]:
    return {"username": user.name, "groups": list(user.groups)} if user else {}


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


def audit_failed_authentication(
    sink: Callable[[dict[str, Any]], None] | None, request: web.Request, has_client_cert: bool
) -> None:
    """The audit event of a 401 from the authentication filter (kube's WithFailedAuthenticationAudit): no user, stage
    ResponseStarted, the attempted methods as the status message."""
    if sink is None:
        return
    info = request.get(INFO_KEY)
    event: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": audit_id(request),
        "stage": "ResponseStarted",
        "requestURI": request.path_qs,
        "verb": info.verb if info else request.method.lower(),
        "user": {},
        "sourceIPs": [request.remote or ""],
        "userAgent": request.headers.get("User-Agent", ""),
        "responseStatus": {"metadata": {}, "message": _auth_methods(request, has_client_cert), "code": 401},
    }
    try:
        sink(event)
    except Exception:
        log.exception("audit sink failed")


def audit_middleware(sink: Callable[[dict[str, Any]], None] | None) -> Middleware:
    @web.middleware
    async def audit(request: web.Request, handler: Handler) -> web.StreamResponse:
        if sink is None:
            return await handler(request)
        start = time.monotonic()
        code = 500
        try:
            resp = await handler(request)
            code = resp.status
            return resp
        except web.HTTPException as e:
            code = e.status
            raise
        except Exception as e:
            code = getattr(e, "code", 500)
            raise
        finally:
            info = request.get(INFO_KEY)
            user = request.get(USER_KEY)
            event: dict[str, Any] = {
                "kind": "Event",
                "apiVersion": "audit.k8s.io/v1",
                "level": "Metadata",
                "auditID": audit_id(request),
                "stage": "ResponseComplete",
                "requestURI": request.path_qs,  # query strings carry no secrets in the Kubernetes API
                "verb": info.verb if info else request.method.lower(),
                "user": _user(request.get(IMPERSONATOR_KEY) or user),
                "sourceIPs": [request.remote or ""],
                "userAgent": request.headers.get("User-Agent", ""),
                "responseStatus": {"code": code},
                "latencyMs": round((time.monotonic() - start) * 1000, 3),
            }
            if request.get(IMPERSONATOR_KEY) is not None:
                event["impersonatedUser"] = _user(user)
            if (record := recorder.current()) is not None and record.annotations:
                event["annotations"] = dict(record.annotations)
            if info and info.is_resource:
                ref: dict[str, Any] = {"resource": info.resource, "apiVersion": info.api_version}
                if info.api_group:
                    ref["apiGroup"] = info.api_group
                if info.namespace:
                    ref["namespace"] = info.namespace
                if info.name:
                    ref["name"] = info.name
                if info.subresource:
                    ref["subresource"] = info.subresource
                event["objectRef"] = ref
            try:
                sink(event)
            except Exception:
                log.exception("audit sink failed")

    return audit
