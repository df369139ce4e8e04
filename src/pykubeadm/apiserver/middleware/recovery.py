"""Outermost middleware: ApiError → Status JSON, aiohttp HTTP errors → Status, anything else → 500 InternalError."""

from __future__ import annotations

import logging

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.authz.messages import StatusError
from pykubeadm.apiserver.handlers.codec import json_response
from pykubeadm.apiserver.handlers.negotiation import render

__all__ = ["recovery_middleware"]

log = logging.getLogger("pykubeadm.apiserver")

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def recovery_middleware() -> Middleware:
    @web.middleware
    async def recovery(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return render(request, await handler(request))
        except st.ApiError as e:
            return render(request, json_response(e.to_status(), status=e.code))
        except StatusError as e:  # errors raised by the auth/admission package
            return render(request, json_response(e.status(), status=e.code))
        except web.HTTPException as e:
            if e.status < 400:
                raise
            reason = _REASONS.get(e.status, "")
            msg = e.text or reason
            return json_response(st.ApiError(e.status, reason, msg).to_status(), status=e.status)
        except (ConnectionResetError, TimeoutError):
            raise
        except Exception as e:
            log.exception("panic serving %s %s", request.method, request.path)
            return json_response(st.internal(type(e).__name__).to_status(), status=500)

    return recovery
