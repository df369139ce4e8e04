"""Create-only endpoints that are not stored: the review APIs (SubjectAccessReview & co., SelfSubjectReview,
TokenReview), pods/binding and serviceaccounts/token. Evaluation functions registered in `ApiState.reviews` (by the
auth code) take precedence; the defaults here evaluate through the configured Authorizer/Authenticator.
"""

from __future__ import annotations

import copy

from aiohttp import web

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.authn.user import AuthRequest, UserInfo
from pykubeadm.apiserver.authz.attributes import Attributes, Decision
from pykubeadm.apiserver.handlers.codec import decode_body, json_response
from pykubeadm.apiserver.handlers.context import admit_of, ctx_of, info_of, state_of, user_of
from pykubeadm.apiserver.printing import now_rfc3339
from pykubeadm.apiserver.registry import Store, VirtualKind
from pykubeadm.apiserver.registry.base import Obj

__all__ = ["attributes_from_spec", "create_binding", "create_review", "create_token", "user_dict"]


def user_dict(u: UserInfo) -> Obj:
    d: Obj = {"username": u.name}
    if u.uid:
        d["uid"] = u.uid
    if u.groups:
        d["groups"] = list(u.groups)
    if u.extra:
        d["extra"] = {k: list(v) for k, v in u.extra.items()}
    return d


def _spec_user(spec: Obj) -> UserInfo:
    extra = {k: tuple(v or []) for k, v in (spec.get("extra") or {}).items()}
    return UserInfo(
        name=spec.get("user", ""), uid=spec.get("uid", ""), groups=tuple(spec.get("groups") or ()), extra=extra
    )


def attributes_from_spec(user: UserInfo, spec: Obj) -> Attributes:
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if ra:
        return Attributes(
            user=user,
            verb=ra.get("verb", ""),
            resource_request=True,
            namespace=ra.get("namespace", ""),
            api_group=ra.get("group", ""),
            api_version=ra.get("version", "") or "*",
            resource=ra.get("resource", ""),
            subresource=ra.get("subresource", ""),
            name=ra.get("name", ""),
        )
    return Attributes(
        user=user, verb=(nra or {}).get("verb", ""), resource_request=False, path=(nra or {}).get("path", "")
    )


async def _access_review(request: web.Request, kind: VirtualKind, body: Obj) -> Obj:
    spec = body.get("spec")
    if not isinstance(spec, dict):
        raise st.invalid(kind.kind, kind.group, "", [st.Cause("FieldValueRequired", "Required value", "spec")])
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    causes = []
    if bool(ra) == bool(nra):
        causes.append(
            st.Cause(
                "FieldValueInvalid",
                "Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
                "spec.resourceAttributes",
            )
        )
    if (
        kind.kind in ("SubjectAccessReview", "LocalSubjectAccessReview")
        and not spec.get("user")
        and not spec.get("groups")
    ):
        causes.append(
            st.Cause("FieldValueInvalid", "Invalid value: at least one of user or group must be specified", "spec.user")
        )
    if kind.kind == "LocalSubjectAccessReview":
        info = info_of(request)
        if nra:
            causes.append(
                st.Cause(
                    "FieldValueInvalid",
                    "Invalid value: disallowed on this kind of request",
                    "spec.nonResourceAttributes",
                )
            )
        if ra and ra.get("namespace") != info.namespace:
            causes.append(
                st.Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{(ra or {}).get("namespace", "")}": must match metadata.namespace',
                    "spec.resourceAttributes.namespace",
                )
            )
    if causes:
        raise st.invalid(kind.kind, kind.group, "", causes)
    user = user_of(request) if kind.kind == "SelfSubjectAccessReview" else _spec_user(spec)
    if kind.kind == "SelfSubjectAccessReview":
        body["spec"] = {k: v for k, v in spec.items() if k in ("resourceAttributes", "nonResourceAttributes")}
    decision, reason = await state_of(request).authorizer(attributes_from_spec(user, spec))
    status: Obj = {"allowed": decision == Decision.ALLOW}
    if decision == Decision.DENY:
        status["denied"] = True
    if reason:
        status["reason"] = reason
    return status


async def _default_eval(request: web.Request, kind: VirtualKind, body: Obj) -> Obj:
    if kind.kind.endswith("AccessReview"):
        return await _access_review(request, kind, body)
    if kind.kind == "SelfSubjectReview":
        return {"userInfo": user_dict(user_of(request))}
    if kind.kind == "TokenReview":
        token = (body.get("spec") or {}).get("token", "")
        if not token:
            raise st.invalid(
                kind.kind, kind.group, "", [st.Cause("FieldValueRequired", "Required value: token", "spec.token")]
            )
        try:
            user = await state_of(request).authenticator(AuthRequest(headers={"Authorization": f"Bearer {token}"}))
        except Exception:
            user = None
        if user is None:
            return {"authenticated": False, "user": {}, "error": "invalid bearer token"}
        return {
            "authenticated": True,
            "user": user_dict(user),
            "audiences": (body.get("spec") or {}).get("audiences") or [],
        }
    if kind.kind == "SelfSubjectRulesReview":
        return {
            "resourceRules": [],
            "nonResourceRules": [],
            "incomplete": True,
            "evaluationError": "rules review is not supported by this authorizer",
        }
    raise st.not_found_path()


async def create_review(request: web.Request, kind: VirtualKind) -> web.Response:
    body = await decode_body(request, kind.kind, kind.api_version)
    body.setdefault("metadata", {})
    body["kind"], body["apiVersion"] = kind.kind, kind.api_version
    evaluate = state_of(request).reviews.get(kind.kind)
    if evaluate is not None:
        # The auth package's evaluators return the whole review object (spec echoed, status filled).
        out = await evaluate(request=request, kind=kind, body=body, user=user_of(request))
    else:
        body["status"] = await _default_eval(request, kind, body)
        out = body
    out["kind"], out["apiVersion"] = kind.kind, kind.api_version
    out.setdefault("metadata", {}).setdefault("creationTimestamp", None)
    if kind.kind.endswith("AccessReview"):
        out.setdefault("status", {}).setdefault("allowed", False)
    return json_response(out, status=201)


async def create_binding(request: web.Request, store: Store) -> web.Response:
    """POST pods/<name>/binding: set spec.nodeName once (the scheduler's bind)."""
    info = info_of(request)
    body = await decode_body(request, "Binding", "v1")
    target = (body.get("target") or {}).get("name")
    if not target:
        raise st.invalid("Binding", "", info.name, [st.Cause("FieldValueRequired", "Required value", "target.name")])

    def bind(old: Obj | None) -> Obj:
        assert old is not None
        new = copy.deepcopy(old)
        cur = (new.get("spec") or {}).get("nodeName")
        if cur:
            raise st.conflict("pods", "", info.name, f'pod {info.name} is already assigned to node "{cur}"')
        if new["metadata"].get("deletionTimestamp"):
            raise st.conflict("pods", "", info.name, f"pod {info.name} is being deleted, cannot be assigned to a host")
        new.setdefault("spec", {})["nodeName"] = target
        new["metadata"].pop("resourceVersion", None)
        return new

    def scheduled(old: Obj | None) -> Obj:
        assert old is not None
        new = copy.deepcopy(old)
        new["metadata"].pop("resourceVersion", None)
        conds = [c for c in (new.setdefault("status", {}).get("conditions") or []) if c.get("type") != "PodScheduled"]
        conds.append(
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}
        )
        new["status"]["conditions"] = conds
        return new

    ctx = ctx_of(request)
    await store.update(info.namespace, info.name, bind, ctx, "", admit_of(request, store))
    if not ctx.dry_run:
        await store.update(info.namespace, info.name, scheduled, ctx, "status")
    return json_response(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, status=201
    )


async def create_token(request: web.Request, store: Store) -> web.Response:
    evaluate = state_of(request).reviews.get("TokenRequest")
    if evaluate is None:
        raise st.ApiError(
            404,
            "NotFound",
            "the server could not find the requested resource (TokenRequest signing is not configured)",
            {},
        )
    body = await decode_body(request, "TokenRequest", "authentication.k8s.io/v1")
    out = await evaluate(request=request, kind=None, body=body, user=user_of(request))
    out["kind"], out["apiVersion"] = "TokenRequest", "authentication.k8s.io/v1"
    return json_response(out, status=201)
