"""The aiohttp Application of the apiserver: the middleware chain in its fixed order and the one catch-all route."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from pykubeadm.apiserver.flowcontrol import on_response_prepare
from pykubeadm.apiserver.handlers.dispatch import handle
from pykubeadm.apiserver.metrics import METRICS, ApiMetrics, instrument_storage, metrics_middleware
from pykubeadm.apiserver.middleware import (
    InflightLimits,
    admission_record_middleware,
    audit_middleware,
    authentication_middleware,
    authorization_middleware,
    impersonation_middleware,
    max_in_flight_middleware,
    recovery_middleware,
    request_info_middleware,
)
from pykubeadm.apiserver.middleware.audit import Auditor, audit_response_started
from pykubeadm.apiserver.middleware.timeout import request_timeout_middleware
from pykubeadm.apiserver.state import STATE, ApiState

__all__ = ["build_app"]

CLIENT_MAX_SIZE = 4 * 1024 * 1024


def build_app(
    state: ApiState,
    audit_sink: Auditor | Callable[[dict[str, Any]], None] | None = None,
    limits: InflightLimits | None = None,
    request_timeout: float | None = None,
) -> web.Application:
    """`audit_sink`: an Auditor (policy + backend), or a plain sink that gets every request at Metadata level."""
    auditor = Auditor.of(audit_sink)
    app = web.Application(
        middlewares=[
            admission_record_middleware(),
            recovery_middleware(),
            request_info_middleware(),
            metrics_middleware(),
            authentication_middleware(auditor),
            max_in_flight_middleware(limits),
            impersonation_middleware(),
            audit_middleware(auditor),
            authorization_middleware(),
            *([request_timeout_middleware(request_timeout)] if request_timeout else []),
        ],
        client_max_size=CLIENT_MAX_SIZE,
    )
    app[STATE] = state
    app[METRICS] = ApiMetrics(state)
    instrument_storage(state, app[METRICS])
    app.on_response_prepare.append(on_response_prepare)
    if auditor is not None:
        app.on_response_prepare.append(audit_response_started)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app
