"""RBAC authorizer (--authorization-mode=…,RBAC) and the rule-matching helpers the review APIs reuse.

Reads ClusterRoles/Roles/bindings through the ObjectSource (the core caches them). Semantics follow kube-apiserver's
`rbac.go` / `evaluation_helpers.go` as described in the fact sheet (controlplane §11.2–11.3): additive only, a
decision of ALLOW or NO_OPINION, never DENY; RoleBindings may reference ClusterRoles (scoped to their namespace).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.authz.attributes import Attributes, Decision
from pykubeadm.apiserver.objects import ObjectSource

__all__ = [
    "CLUSTER_ROLES",
    "CLUSTER_ROLE_BINDINGS",
    "ROLES",
    "ROLE_BINDINGS",
    "RBACAuthorizer",
    "RuleSet",
    "rule_allows",
    "rules_allow",
    "subject_matches",
]

CLUSTER_ROLES = "clusterroles.rbac.authorization.k8s.io"
CLUSTER_ROLE_BINDINGS = "clusterrolebindings.rbac.authorization.k8s.io"
ROLES = "roles.rbac.authorization.k8s.io"
ROLE_BINDINGS = "rolebindings.rbac.authorization.k8s.io"

Rule = Mapping[str, Any]


def _has(values: Iterable[str] | None, wanted: str) -> bool:
    return any(v == "*" or v == wanted for v in values or ())


def _resource_matches(rule_resources: Iterable[str] | None, resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for r in rule_resources or ():
        if r == "*" or r == combined:
            return True
        if subresource and r == "*/" + subresource:
            return True
    return False


def _non_resource_matches(urls: Iterable[str] | None, path: str) -> bool:
    for u in urls or ():
        if u == "*" or u == path:
            return True
        if u.endswith("*") and path.startswith(u.rstrip("*")):
            return True
    return False


def rule_allows(rule: Rule, attrs: Attributes) -> bool:
    """Whether one PolicyRule allows the request (verb, apiGroup, resource[/sub], resourceName, or nonResourceURL)."""
    if not _has(rule.get("verbs"), attrs.verb):
        return False
    if not attrs.resource_request:
        return _non_resource_matches(rule.get("nonResourceURLs"), attrs.path)
    if not _has(rule.get("apiGroups"), attrs.api_group):
        return False
    if not _resource_matches(rule.get("resources"), attrs.resource, attrs.subresource):
        return False
    names = rule.get("resourceNames") or ()
    return not names or attrs.name in names


def rules_allow(rules: Iterable[Rule], attrs: Attributes) -> bool:
    return any(rule_allows(r, attrs) for r in rules)


def subject_matches(subject: Mapping[str, Any], user: UserInfo, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        return bool(ns) and user.name == f"system:serviceaccount:{ns}:{name}"
    return False


def _describe_subject(subject: Mapping[str, Any], binding_namespace: str) -> str:
    if subject.get("kind") == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        return f'ServiceAccount "{subject.get("name", "")}/{ns}"'
    return f'{subject.get("kind")} "{subject.get("name", "")}"'


@dataclass
class RuleSet:
    """The rules that apply to a user in a namespace, plus role-resolution errors (for SelfSubjectRulesReview)."""

    rules: list[Rule]
    errors: list[str]


class RBACAuthorizer:
    """An Authorizer evaluating ClusterRoleBindings, then RoleBindings of the request's namespace."""

    def __init__(self, source: ObjectSource):
        self._source = source

    @property
    def source(self) -> ObjectSource:
        return self._source

    async def _role_rules(self, ref: Mapping[str, Any], namespace: str) -> tuple[list[Rule], str | None]:
        kind, name = ref.get("kind"), ref.get("name", "")
        if kind == "ClusterRole":
            role = await self._source.get(CLUSTER_ROLES, "", name)
            if role is None:
                return [], f'clusterrole.rbac.authorization.k8s.io "{name}" not found'
        elif kind == "Role" and namespace:
            role = await self._source.get(ROLES, namespace, name)
            if role is None:
                return [], f'role.rbac.authorization.k8s.io "{name}" not found'
        else:
            return [], f"unsupported role reference kind: {kind!r}"
        return list(role.get("rules") or []), None

    async def _bindings(self, namespace: str) -> list[tuple[str, dict[str, Any]]]:
        out = [("", b) for b in await self._source.list(CLUSTER_ROLE_BINDINGS)]
        if namespace:
            out += [(namespace, b) for b in await self._source.list(ROLE_BINDINGS, namespace)]
        return out

    async def __call__(self, attrs: Attributes) -> tuple[Decision, str]:
        errors: list[str] = []
        for ns, binding in await self._bindings(attrs.namespace if attrs.resource_request else ""):
            subject = next((s for s in binding.get("subjects") or () if subject_matches(s, attrs.user, ns)), None)
            if subject is None:
                continue
            ref = binding.get("roleRef") or {}
            rules, err = await self._role_rules(ref, ns)
            if err:
                errors.append(err)
                continue
            if rules_allow(rules, attrs):
                bname = binding.get("metadata", {}).get("name", "")
                kind = "RoleBinding" if ns else "ClusterRoleBinding"
                where = f"{bname}/{ns}" if ns else bname
                return Decision.ALLOW, (
                    f'RBAC: allowed by {kind} "{where}" of {ref.get("kind")} "{ref.get("name")}" '
                    f"to {_describe_subject(subject, ns)}"
                )
        return Decision.NO_OPINION, f"RBAC: {_aggregate(errors)}" if errors else ""

    async def rules_for(self, user: UserInfo, namespace: str) -> RuleSet:
        """Every rule granted to `user` cluster-wide and (if given) in `namespace`."""
        rules: list[Rule] = []
        errors: list[str] = []
        for ns, binding in await self._bindings(namespace):
            if not any(subject_matches(s, user, ns) for s in binding.get("subjects") or ()):
                continue
            got, err = await self._role_rules(binding.get("roleRef") or {}, ns)
            if err:
                errors.append(err)
            rules.extend(got)
        return RuleSet(rules, errors)


def _aggregate(errors: list[str]) -> str:
    if not errors:
        return ""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
