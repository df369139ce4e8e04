"""RBAC privilege-escalation prevention for writes of Roles, ClusterRoles and their bindings.

kube-apiserver does this in the RBAC REST storage; here it is a validating plugin that `build_auth` always adds when
RBAC is enabled. A user may create/update a role only with rules they already hold (or the `escalate` verb on it),
and may bind a role only if they hold its rules (or the `bind` verb on it); `system:masters` may do anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pykubeadm import constants
from pykubeadm.apiserver.admission.interfaces import AdmissionAttributes, Operation, forbidden
from pykubeadm.apiserver.authz.attributes import Attributes, Authorizer, Decision
from pykubeadm.apiserver.authz.rbac import CLUSTER_ROLES, ROLES, RBACAuthorizer

__all__ = ["RBACEscalationCheck", "covers", "uncovered_rules"]

_GROUP = "rbac.authorization.k8s.io"
Rule = Mapping[str, Any]


def _has(values: Iterable[str], wanted: str) -> bool:
    values = list(values or ())
    return "*" in values or wanted in values


def _resource_covered(owner: Iterable[str], resource: str) -> bool:
    owner = list(owner or ())
    if "*" in owner or resource in owner:
        return True
    return "/" in resource and "*/" + resource.split("/", 1)[1] in owner


def _url_covered(owner: Iterable[str], url: str) -> bool:
    return any(u == "*" or u == url or (u.endswith("*") and url.startswith(u.rstrip("*"))) for u in owner or ())


def _breakdown(rule: Rule) -> list[dict[str, Any]]:
    """One simple rule per (group, resource, verb[, name]) or (url, verb)."""
    out: list[dict[str, Any]] = []
    verbs = list(rule.get("verbs") or ())
    for url in rule.get("nonResourceURLs") or ():
        out += [{"nonResourceURLs": [url], "verbs": [v]} for v in verbs]
    names = list(rule.get("resourceNames") or ()) or [None]
    for group in rule.get("apiGroups") or ():
        for resource in rule.get("resources") or ():
            for verb in verbs:
                for name in names:
                    simple: dict[str, Any] = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                    if name is not None:
                        simple["resourceNames"] = [name]
                    out.append(simple)
    return out


def _simple_covered(owner: Rule, simple: dict[str, Any]) -> bool:
    verb = simple["verbs"][0]
    if not _has(owner.get("verbs") or (), verb):
        return False
    if "nonResourceURLs" in simple:
        return _url_covered(owner.get("nonResourceURLs") or (), simple["nonResourceURLs"][0])
    if not _has(owner.get("apiGroups") or (), simple["apiGroups"][0]):
        return False
    if not _resource_covered(owner.get("resources") or (), simple["resources"][0]):
        return False
    owner_names = list(owner.get("resourceNames") or ())
    if not owner_names:
        return True
    return "resourceNames" in simple and simple["resourceNames"][0] in owner_names


def uncovered_rules(owner_rules: Iterable[Rule], requested: Iterable[Rule]) -> list[dict[str, Any]]:
    """The simple rules of `requested` that no owner rule covers (empty → the owner holds them all)."""
    owners = list(owner_rules)
    return [s for rule in requested for s in _breakdown(rule) if not any(_simple_covered(o, s) for o in owners)]


def covers(owner_rules: Iterable[Rule], requested: Iterable[Rule]) -> bool:
    return not uncovered_rules(owner_rules, requested)


def _compact(rule: dict[str, Any]) -> str:
    def q(values: list[str]) -> str:
        return "[" + " ".join(f'"{v}"' for v in values) + "]"

    parts = []
    for key, label in (("apiGroups", "APIGroups"), ("resources", "Resources"), ("resourceNames", "ResourceNames"),
                       ("nonResourceURLs", "NonResourceURLs"), ("verbs", "Verbs")):  # fmt: skip
        if rule.get(key):
            parts.append(f"{label}:{q(rule[key])}")
    return "{" + ", ".join(parts) + "}"


class RBACEscalationCheck:
    name = "RBACEscalationCheck"

    def __init__(self, rbac: RBACAuthorizer, authorizer: Authorizer):
        self._rbac = rbac
        self._authorizer = authorizer

    def handles(self, op: Operation) -> bool:
        return op in (Operation.CREATE, Operation.UPDATE)

    async def _authorized(self, attrs: AdmissionAttributes, verb: str, resource: str, name: str, ns: str) -> bool:
        decision, _ = await self._authorizer(
            Attributes(
                attrs.user, verb, True, namespace=ns, api_group=_GROUP, api_version="*", resource=resource, name=name
            )
        )
        return decision is Decision.ALLOW

    async def validate(self, attrs: AdmissionAttributes) -> None:
        if attrs.group != _GROUP or attrs.subresource or attrs.obj is None:
            return
        if constants.SYSTEM_PRIVILEGED_GROUP in attrs.user.groups:
            return
        obj = attrs.obj
        name = (obj.get("metadata") or {}).get("name", "") or attrs.name
        if attrs.resource in ("roles", "clusterroles"):
            if await self._authorized(attrs, "escalate", attrs.resource, name, attrs.namespace):
                return
            requested = list(obj.get("rules") or [])
        elif attrs.resource in ("rolebindings", "clusterrolebindings"):
            ref = obj.get("roleRef") or {}
            ref_resource = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
            if await self._authorized(attrs, "bind", ref_resource, ref.get("name", ""), attrs.namespace):
                return
            if ref.get("kind") == "ClusterRole":
                role = await self._rbac.source.get(CLUSTER_ROLES, "", ref.get("name", ""))
            else:
                role = await self._rbac.source.get(ROLES, attrs.namespace, ref.get("name", ""))
            if role is None:
                kind = "clusterrole" if ref.get("kind") == "ClusterRole" else "role"
                raise forbidden(attrs, f'{kind}.rbac.authorization.k8s.io "{ref.get("name", "")}" not found')
            requested = list(role.get("rules") or [])
        else:
            return
        held = await self._rbac.rules_for(attrs.user, attrs.namespace)
        missing = uncovered_rules(held.rules, requested)
        if not missing:
            return
        groups = "[" + " ".join(f'"{g}"' for g in attrs.user.groups) + "]"
        msg = (
            f'user "{attrs.user.name}" (groups={groups}) is attempting to grant RBAC permissions not currently held:\n'
            + "\n".join(_compact(m) for m in missing)
        )
        if held.errors:
            msg += "; resolution errors: [" + ", ".join(held.errors) + "]"
        raise forbidden(attrs, msg)
