"""Evaluation of the authentication.k8s.io/v1 review APIs: TokenReview and SelfSubjectReview (`kubectl auth whoami`).

Async functions of (request body, …) returning the response object dict; never stored.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from pykubeadm.apiserver.authn import serviceaccount
from pykubeadm.apiserver.authn.union import add_authenticated_group
from pykubeadm.apiserver.authn.user import AuthenticationError, TokenAuthenticator, UserInfo
from pykubeadm.apiserver.authz.messages import StatusError

__all__ = ["self_subject_review", "token_review", "user_info_dict"]


def user_info_dict(user: UserInfo) -> dict[str, Any]:
    """authentication.k8s.io UserInfo with empty fields omitted."""
    out: dict[str, Any] = {"username": user.name}
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out["extra"] = {k: list(v) for k, v in user.extra.items()}
    return out


async def self_subject_review(body: dict[str, Any] | None, user: UserInfo) -> dict[str, Any]:
    """SelfSubjectReview: echo the requester's identity (the request body is ignored, as kube-apiserver does)."""
    api_version = (body or {}).get("apiVersion") or "authentication.k8s.io/v1"
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": api_version,
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": user_info_dict(user)},
    }


async def token_review(
    body: dict[str, Any], tokens: TokenAuthenticator, api_audiences: Sequence[str] = ()
) -> dict[str, Any]:
    """TokenReview: authenticate spec.token (never raises for a bad token: status.authenticated=false + error)."""
    spec = body.get("spec") or {}
    token = spec.get("token") or ""
    if not token:
        raise StatusError(400, "BadRequest", "token is required for TokenReview in authentication")
    requested = tuple(spec.get("audiences") or ())
    status: dict[str, Any] = {"user": {}}
    req_token = serviceaccount.REQUESTED_AUDIENCES.set(requested or None)
    match_token = serviceaccount.MATCHED_AUDIENCES.set(None)
    try:
        user = await tokens(token)
        matched = serviceaccount.MATCHED_AUDIENCES.get()
    except AuthenticationError as err:
        user, matched = None, None
        status["error"] = str(err)
    finally:
        serviceaccount.REQUESTED_AUDIENCES.reset(req_token)
        serviceaccount.MATCHED_AUDIENCES.reset(match_token)
    if user is not None and matched is None:  # audience-agnostic tokens (bootstrap, static): the server's audiences
        matched = tuple(a for a in requested if a in api_audiences) if requested else tuple(api_audiences)
        if requested and not matched:
            user = None
            status["error"] = "token audiences is invalid for the target audiences"
    if user is not None:
        status["authenticated"] = True
        status["user"] = user_info_dict(add_authenticated_group(user))
        if matched:
            status["audiences"] = list(matched)
    else:
        status["authenticated"] = False
        status.setdefault("error", "invalid bearer token")
    out = copy.deepcopy(body)
    out.setdefault("metadata", {})
    out["status"] = status
    return out
