"""Authorization middleware: RequestInfo + user → Attributes → Authorizer; denial → 403 with kube-apiserver's message."""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.attributes import Attributes, Decision
from pykubeadm.apiserver.handlers.context import INFO_KEY, USER_KEY
from pykubeadm.apiserver.middleware.audit import AUTHZ_DECISION_KEY
from pykubeadm.apiserver.requestinfo import RequestInfo
from pykubeadm.apiserver.state import STATE

__all__ = ["attributes_of", "authorization_middleware", "forbidden_error"]


def _name_from_field_selector(selector: str) -> str:
    """kube-apiserver treats a list/watch with `metadata.name=X` (or `==`) as a request for the object named X."""
    for term in selector.split(","):
        key, op, value = term.partition("==") if "==" in term else term.partition("=")
        if op and key.strip() == "metadata.name" and not key.endswith("!"):
            return value.strip()
    return ""


def attributes_of(info: RequestInfo, user: UserInfo, query: Mapping[str, str] | None = None) -> Attributes:
    if not info.is_resource:
        return Attributes(user=user, verb=info.verb, resource_request=False, path=info.path)
    query = query or {}
    field_selector = query.get("fieldSelector", "")
    name = info.name
    if not name and info.verb in ("list", "watch") and field_selector:
        name = _name_from_field_selector(field_selector)
    return Attributes(
        user=user,
        verb=info.verb,
        resource_request=True,
        namespace=info.namespace,
        api_group=info.api_group,
        api_version=info.api_version,
        resource=info.resource,
        subresource=info.subresource,
        name=name,
        path=info.path,
        field_selector=field_selector,
        label_selector=query.get("labelSelector", ""),
    )


def forbidden_error(attrs: Attributes, reason: str) -> st.ApiError:
    user = attrs.user.name
    if not attrs.resource_request:
        msg = f'forbidden: User "{user}" cannot {attrs.verb} path "{attrs.path}"'
        if reason:
            msg += f": {reason}"
        return st.ApiError(403, "Forbidden", msg, {})
    res = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    why = f'User "{user}" cannot {attrs.verb} resource "{res}" in API group "{attrs.api_group}"'
    why += f' in the namespace "{attrs.namespace}"' if attrs.namespace else " at the cluster scope"
    if reason:
        why += f": {reason}"
    return st.forbidden(attrs.resource, attrs.api_group, attrs.name, why)


def authorization_middleware() -> Middleware:
    @web.middleware
    async def authorization(request: web.Request, handler: Handler) -> web.StreamResponse:
        attrs = attributes_of(request[INFO_KEY], request[USER_KEY], request.query)
        decision, reason = await request.app[STATE].authorizer(attrs)
        request[AUTHZ_DECISION_KEY] = ("allow" if decision == Decision.ALLOW else "forbid", reason)
        if decision != Decision.ALLOW:
            raise forbidden_error(attrs, reason)
        return await handler(request)

    return authorization
