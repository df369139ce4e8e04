"""The aiohttp Application of the apiserver: the middleware chain in its fixed order and the one catch-all route."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from pykubeadm.apiserver.handlers.dispatch import handle
from pykubeadm.apiserver.middleware import (
    audit_middleware,
    authentication_middleware,
    authorization_middleware,
    impersonation_middleware,
    recovery_middleware,
    request_info_middleware,
)
from pykubeadm.apiserver.state import STATE, ApiState

__all__ = ["build_app"]

CLIENT_MAX_SIZE = 4 * 1024 * 1024


def build_app(state: ApiState, audit_sink: Callable[[dict[str, Any]], None] | None = None) -> web.Application:
    app = web.Application(
        middlewares=[
            recovery_middleware(),
            request_info_middleware(),
            authentication_middleware(),
            impersonation_middleware(),
            audit_middleware(audit_sink),
            authorization_middleware(),
        ],
        client_max_size=CLIENT_MAX_SIZE,
    )
    app[STATE] = state
    app.router.add_route("*", "/{tail:.*}", handle)
    return app
