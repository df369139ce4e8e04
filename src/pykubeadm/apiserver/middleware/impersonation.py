"""Impersonation (`kubectl --as/--as-group/--as-uid`): the Impersonate-* headers replace the authenticated user when
that user may `impersonate` each requested user, group, uid and extra, as kube-apiserver's WithImpersonation does.

Checks (verb `impersonate`): `users` (or `serviceaccounts` in its namespace for `system:serviceaccount:<ns>:<name>`),
`groups`, `uids` and `userextras/<key>` (API group authentication.k8s.io for the last two). The impersonated user gets
the requested groups (a service account also its `system:serviceaccounts[:<ns>]` groups) plus `system:authenticated`
(`system:unauthenticated` for system:anonymous). Group, uid or extra headers without Impersonate-User are a 400.
"""

from __future__ import annotations

from urllib.parse import unquote

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from multidict import MultiMapping

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.attributes import Attributes, Decision
from pykubeadm.apiserver.handlers.context import IMPERSONATOR_KEY, USER_KEY
from pykubeadm.apiserver.middleware.authorization import forbidden_error
from pykubeadm.apiserver.state import STATE

__all__ = ["impersonated_user", "impersonation_middleware"]

_USER = "Impersonate-User"
_UID = "Impersonate-Uid"
_GROUP = "Impersonate-Group"
_EXTRA_PREFIX = "impersonate-extra-"
_SA_PREFIX = "system:serviceaccount:"
_ANONYMOUS = "system:anonymous"
_AUTH_GROUP = "authentication.k8s.io"


def _requests(headers: MultiMapping[str]) -> tuple[str, str, list[str], dict[str, list[str]]]:
    extra: dict[str, list[str]] = {}
    for key, value in headers.items():
        if key.lower().startswith(_EXTRA_PREFIX):
            extra.setdefault(unquote(key[len(_EXTRA_PREFIX) :]).lower(), []).append(value)
    return headers.get(_USER, ""), headers.get(_UID, ""), list(headers.getall(_GROUP, [])), extra


def _checks(user: UserInfo, name: str, uid: str, groups: list[str], extra: dict[str, list[str]]) -> list[Attributes]:
    def attrs(resource: str, obj: str, *, namespace: str = "", group: str = "", sub: str = "") -> Attributes:
        return Attributes(
            user=user,
            verb="impersonate",
            resource_request=True,
            namespace=namespace,
            api_group=group,
            resource=resource,
            subresource=sub,
            name=obj,
        )

    out = []
    if name.startswith(_SA_PREFIX) and name.count(":") == 3:
        ns, sa = name[len(_SA_PREFIX) :].split(":", 1)
        out.append(attrs("serviceaccounts", sa, namespace=ns))
    else:
        out.append(attrs("users", name))
    out += [attrs("groups", g) for g in groups]
    if uid:
        out.append(attrs("uids", uid, group=_AUTH_GROUP))
    out += [attrs("userextras", v, group=_AUTH_GROUP, sub=k) for k, vs in extra.items() for v in vs]
    return out


def impersonated_user(name: str, uid: str, groups: list[str], extra: dict[str, list[str]]) -> UserInfo:
    """The user a permitted impersonation request runs as."""
    all_groups = list(groups)
    if name.startswith(_SA_PREFIX) and name.count(":") == 3 and not groups:
        ns = name[len(_SA_PREFIX) :].split(":", 1)[0]
        all_groups += ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]
    marker = "system:unauthenticated" if name == _ANONYMOUS else "system:authenticated"
    if marker not in all_groups:
        all_groups.append(marker)
    return UserInfo(name=name, uid=uid, groups=tuple(all_groups), extra={k: tuple(v) for k, v in extra.items()})


def impersonation_middleware() -> Middleware:
    @web.middleware
    async def impersonation(request: web.Request, handler: Handler) -> web.StreamResponse:
        headers = request.headers
        if not any(k.lower().startswith("impersonate-") for k in headers):
            return await handler(request)
        name, uid, groups, extra = _requests(headers)
        if not name:
            asked = [k for k in headers if k.lower().startswith("impersonate-")]
            raise st.bad_request(f"requested {asked} without impersonating a user")
        user: UserInfo = request[USER_KEY]
        authorizer = request.app[STATE].authorizer
        for attrs in _checks(user, name, uid, groups, extra):
            decision, reason = await authorizer(attrs)
            if decision != Decision.ALLOW:
                raise forbidden_error(attrs, reason)
        request[IMPERSONATOR_KEY] = user
        request[USER_KEY] = impersonated_user(name, uid, groups, extra)
        return await handler(request)

    return impersonation
