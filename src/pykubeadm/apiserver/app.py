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
from pykubeadm.apiserver.state import STATE, ApiState

__all__ = ["build_app"]

CLIENT_MAX_SIZE = 4 * 1024 * 1024


def build_app(
    state: ApiState,
    audit_sink: Callable[[dict[str, Any]], None] | None = None,
    limits: InflightLimits | None = None,
) -> web.Application:
    app = web.Application(
        middlewares=[
            admission_record_middleware(),
            recovery_middleware(),
            request_info_middleware(),
            metrics_middleware(),
            authentication_middleware(audit_sink),
            max_in_flight_middleware(limits),
            impersonation_middleware(),
            audit_middleware(audit_sink),
            authorization_middleware(),
        ],
        client_max_size=CLIENT_MAX_SIZE,
    )
    app[STATE] = state
    app[METRICS] = ApiMetrics(state)
    instrument_storage(state, app[METRICS])
    app.on_response_prepare.append(on_response_prepare)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app
