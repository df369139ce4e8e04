"""Evaluation of the authorization.k8s.io/v1 review APIs (create-only, never stored): SubjectAccessReview,
LocalSubjectAccessReview, SelfSubjectAccessReview and SelfSubjectRulesReview.

Each is an async function of (request body dict, requesting user, authorizer or rule resolvers) returning the response
object dict (the request echoed with `status` filled); invalid requests raise `StatusError` (422 Invalid).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Protocol

from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.attributes import Attributes, Authorizer, Decision
from pykubeadm.apiserver.authz.messages import invalid_error
from pykubeadm.apiserver.authz.node import node_name_of

__all__ = [
    "RuleResolver",
    "attributes_from_spec",
    "local_subject_access_review",
    "self_subject_access_review",
    "self_subject_rules_review",
    "subject_access_review",
]

_GROUP = "authorization.k8s.io"


def _meta_is_empty(meta: Any) -> bool:
    if not meta:
        return True
    return isinstance(meta, dict) and all(v in (None, "", {}, []) for v in meta.values())


def _check_spec(kind: str, body: dict[str, Any], *, need_subject: bool) -> dict[str, Any]:
    spec = body.get("spec") or {}
    causes: list[tuple[str, str, str]] = []
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if ra is not None and nra is not None:
        causes.append(
            (
                "FieldValueInvalid",
                "spec.nonResourceAttributes",
                'Invalid value: "object": cannot be specified in combination with resourceAttributes',
            )
        )
    if ra is None and nra is None:
        causes.append(
            (
                "FieldValueInvalid",
                "spec.resourceAttributes",
                "Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if need_subject and not spec.get("user") and not spec.get("groups"):
        causes.append(
            ("FieldValueInvalid", "spec.user", 'Invalid value: "": at least one of user or group must be specified')
        )
    if kind != "LocalSubjectAccessReview" and not _meta_is_empty(body.get("metadata")):
        causes.append(("FieldValueInvalid", "metadata", 'Invalid value: "object": must be empty'))
    if causes:
        raise invalid_error(kind, _GROUP, "", causes)
    return spec


def attributes_from_spec(spec: dict[str, Any], user: UserInfo) -> Attributes:
    """Authorization attributes for a review's resourceAttributes / nonResourceAttributes (empty version → "*")."""
    ra = spec.get("resourceAttributes")
    if ra is not None:
        fs = ra.get("fieldSelector") or {}
        ls = ra.get("labelSelector") or {}
        return Attributes(
            user=user,
            verb=ra.get("verb", ""),
            resource_request=True,
            namespace=ra.get("namespace", ""),
            api_group=ra.get("group", ""),
            api_version=ra.get("version") or "*",
            resource=ra.get("resource", ""),
            subresource=ra.get("subresource", ""),
            name=ra.get("name", ""),
            field_selector=fs.get("rawSelector", "") if isinstance(fs, dict) else "",
            label_selector=ls.get("rawSelector", "") if isinstance(ls, dict) else "",
        )
    nra = spec.get("nonResourceAttributes") or {}
    return Attributes(user=user, verb=nra.get("verb", ""), resource_request=False, path=nra.get("path", ""))


async def _evaluate(body: dict[str, Any], attrs: Attributes, authorizer: Authorizer) -> dict[str, Any]:
    decision, reason = await authorizer(attrs)
    status: dict[str, Any] = {"allowed": decision is Decision.ALLOW}
    if decision is Decision.DENY:
        status["denied"] = True
    if reason:
        status["reason"] = reason
    out = copy.deepcopy(body)
    out.setdefault("metadata", {})
    out["status"] = status
    return out


def _user_from_spec(spec: dict[str, Any]) -> UserInfo:
    extra = {k: tuple(v or ()) for k, v in (spec.get("extra") or {}).items()}
    return UserInfo(
        name=spec.get("user", ""), uid=spec.get("uid", ""), groups=tuple(spec.get("groups") or ()), extra=extra
    )


async def subject_access_review(body: dict[str, Any], authorizer: Authorizer) -> dict[str, Any]:
    """SubjectAccessReview: may `spec.user`/`spec.groups` do this? (the caller needs create on subjectaccessreviews)."""
    spec = _check_spec("SubjectAccessReview", body, need_subject=True)
    return await _evaluate(body, attributes_from_spec(spec, _user_from_spec(spec)), authorizer)


async def local_subject_access_review(body: dict[str, Any], namespace: str, authorizer: Authorizer) -> dict[str, Any]:
    """LocalSubjectAccessReview in `namespace` (the request path's namespace)."""
    kind = "LocalSubjectAccessReview"
    spec = _check_spec(kind, body, need_subject=True)
    ra = spec.get("resourceAttributes")
    if spec.get("nonResourceAttributes") is not None:
        raise invalid_error(
            kind,
            _GROUP,
            "",
            [
                (
                    "FieldValueInvalid",
                    "spec.nonResourceAttributes",
                    'Invalid value: "object": disallowed on this kind of request',
                )
            ],
        )
    if ra is not None and ra.get("namespace", "") != namespace:
        raise invalid_error(
            kind,
            _GROUP,
            "",
            [
                (
                    "FieldValueInvalid",
                    "spec.resourceAttributes.namespace",
                    f'Invalid value: "{ra.get("namespace", "")}": must match metadata.namespace',
                )
            ],
        )
    return await _evaluate(body, attributes_from_spec(spec, _user_from_spec(spec)), authorizer)


async def self_subject_access_review(body: dict[str, Any], user: UserInfo, authorizer: Authorizer) -> dict[str, Any]:
    """SelfSubjectAccessReview (`kubectl auth can-i`): may the requesting user do this?"""
    spec = _check_spec("SelfSubjectAccessReview", body, need_subject=False)
    return await _evaluate(body, attributes_from_spec(spec, user), authorizer)


class RuleResolver(Protocol):
    async def rules_for(self, user: UserInfo, namespace: str) -> Any:
        """An object with `rules` (PolicyRule dicts) and `errors` (strings), like rbac.RuleSet."""
        ...


_ALL_RULES = (
    [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
    [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
)


async def self_subject_rules_review(
    body: dict[str, Any],
    user: UserInfo,
    resolvers: Sequence[RuleResolver],
    *,
    privileged_groups: Sequence[str] = ("system:masters",),
    node_authorizer: bool = True,
) -> dict[str, Any]:
    """SelfSubjectRulesReview (`kubectl auth can-i --list`): the rules the user has in spec.namespace."""
    spec = body.get("spec") or {}
    namespace = spec.get("namespace", "")
    resource_rules: list[dict[str, Any]] = []
    non_resource_rules: list[dict[str, Any]] = []
    errors: list[str] = []
    incomplete = False
    if set(privileged_groups) & set(user.groups):
        resource_rules += copy.deepcopy(_ALL_RULES[0])
        non_resource_rules += copy.deepcopy(_ALL_RULES[1])
    if node_authorizer and node_name_of(user) is not None:
        incomplete = True
        errors.append("node authorizer does not support user rule resolution")
    for resolver in resolvers:
        ruleset = await resolver.rules_for(user, namespace)
        errors += list(ruleset.errors)
        for rule in ruleset.rules:
            if rule.get("nonResourceURLs"):
                non_resource_rules.append(
                    {"verbs": list(rule.get("verbs") or []), "nonResourceURLs": list(rule["nonResourceURLs"])}
                )
            else:
                item = {
                    "verbs": list(rule.get("verbs") or []),
                    "apiGroups": list(rule.get("apiGroups") or []),
                    "resources": list(rule.get("resources") or []),
                }
                if rule.get("resourceNames"):
                    item["resourceNames"] = list(rule["resourceNames"])
                resource_rules.append(item)
    if errors:
        incomplete = True
    status: dict[str, Any] = {
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": incomplete,
    }
    if errors:
        status["evaluationError"] = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    out = copy.deepcopy(body)
    out.setdefault("metadata", {})
    out["status"] = status
    return out
