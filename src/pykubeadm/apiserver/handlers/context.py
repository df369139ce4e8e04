"""Per-request helpers for verb handlers: the request info, user, target store, RequestContext and admission callback."""

from __future__ import annotations

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.patching.managedfields import manager_from
from pykubeadm.apiserver.registry import Store
from pykubeadm.apiserver.registry.base import Obj, RequestContext
from pykubeadm.apiserver.registry.store import Admit
from pykubeadm.apiserver.requestinfo import RequestInfo
from pykubeadm.apiserver.state import STATE, ApiState

__all__ = [
    "IMPERSONATOR_KEY",
    "INFO_KEY",
    "USER_KEY",
    "admit_of",
    "ctx_of",
    "dry_run",
    "info_of",
    "state_of",
    "user_of",
]

INFO_KEY = web.RequestKey("request_info", RequestInfo)
USER_KEY = web.RequestKey("user", UserInfo)
#: The authenticated user when the request impersonates another one (USER_KEY is then the impersonated user).
IMPERSONATOR_KEY = web.RequestKey("impersonator", UserInfo)


def info_of(request: web.Request) -> RequestInfo:
    return request[INFO_KEY]


def user_of(request: web.Request) -> UserInfo:
    return request[USER_KEY]


def state_of(request: web.Request) -> ApiState:
    return request.app[STATE]


def dry_run(request: web.Request) -> bool:
    values = request.query.getall("dryRun", [])
    for v in values:
        if v != "All":
            raise st.bad_request(f'Invalid value: "{v}": supported values: "All"')
    return bool(values)


def ctx_of(request: web.Request, dry: bool | None = None) -> RequestContext:
    info = info_of(request)
    return RequestContext(
        user=user_of(request),
        namespace=info.namespace,
        dry_run=dry_run(request) if dry is None else dry,
        field_manager=manager_from(request.query.get("fieldManager", ""), request.headers.get("User-Agent", "")),
    )


def admit_of(request: web.Request, store: Store) -> Admit | None:
    state = state_of(request)
    if state.admission is None:
        return None
    info, user, admission = info_of(request), user_of(request), state.admission
    dry = "dryRun" in request.query

    async def admit(op: str, new: Obj | None, old: Obj | None) -> None:
        await admission(op, info, user, store, new, old, dry)

    return admit
