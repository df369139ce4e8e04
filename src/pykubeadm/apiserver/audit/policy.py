"""The audit.k8s.io/v1 Policy: which level (None, Metadata, Request, RequestResponse) and stages a request is audited
at. Rules are tried in order; the first match decides; no match means level None (not audited), as kube's policy
checker does. Validation errors name the field (`rules[2].level`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "LEVELS",
    "STAGES",
    "AuditPolicyError",
    "Policy",
    "RequestAttrs",
    "Rule",
    "catch_all_policy",
    "load_policy",
    "parse_policy",
]

LEVELS = ("None", "Metadata", "Request", "RequestResponse")
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
_API_VERSIONS = ("audit.k8s.io/v1",)


class AuditPolicyError(Exception):
    """An unusable policy file; the message names the field."""


@dataclass(frozen=True)
class RequestAttrs:
    user: str
    groups: tuple[str, ...]
    verb: str
    resource_request: bool
    path: str = ""
    namespace: str = ""
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


@dataclass(frozen=True)
class GroupResources:
    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()

    def matches(self, a: RequestAttrs) -> bool:
        if a.api_group != self.group:
            return False
        if self.resources:
            full = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
            ok = False
            for r in self.resources:
                if (
                    r in ("*", full)
                    or (r == "*/" + a.subresource and a.subresource)
                    or (r.endswith("/*") and a.subresource and r[:-2] == a.resource)
                ):
                    ok = True
                if ok:
                    break
            if not ok:
                return False
        return not self.resource_names or a.name in self.resource_names


@dataclass(frozen=True)
class Rule:
    level: str
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool | None = None

    @property
    def unconditional(self) -> bool:
        return not (
            self.users or self.user_groups or self.verbs or self.resources or self.namespaces or self.non_resource_urls
        )

    def matches(self, a: RequestAttrs) -> bool:
        if self.users and a.user not in self.users:
            return False
        if self.user_groups and not any(g in self.user_groups for g in a.groups):
            return False
        if self.verbs and a.verb not in self.verbs:
            return False
        if self.non_resource_urls:
            if a.resource_request:
                return False
            return any(u == a.path or (u.endswith("*") and a.path.startswith(u[:-1])) for u in self.non_resource_urls)
        if self.resources or self.namespaces:
            if not a.resource_request:
                return False
            if self.namespaces and a.namespace not in self.namespaces:
                return False
            if self.resources and not any(gr.matches(a) for gr in self.resources):
                return False
        return True


@dataclass(frozen=True)
class Decision:
    level: str
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False


_NONE = Decision("None")


@dataclass
class Policy:
    rules: list[Rule] = field(default_factory=list)
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False

    def __post_init__(self) -> None:
        # Each rule's decision, made once; and the index of the first rule that matches every request, if any.
        self._decisions = [self._decision(r) for r in self.rules]
        self._always = next((i for i, r in enumerate(self.rules) if r.unconditional), None)

    def _decision(self, r: Rule) -> Decision:
        if r.level == "None":
            return _NONE
        omf = self.omit_managed_fields if r.omit_managed_fields is None else r.omit_managed_fields
        return Decision(r.level, self.omit_stages | r.omit_stages, omf)

    def evaluate(self, attrs: RequestAttrs | Callable[[], RequestAttrs]) -> Decision:
        """The decision for a request; `attrs` may be a function building them, called only when a rule needs them
        (a policy whose first rule matches everything never does)."""
        if self._always == 0:
            return self._decisions[0]
        a = attrs() if callable(attrs) else attrs
        for r, d in zip(self.rules, self._decisions, strict=True):
            if r.matches(a):
                return d
        return _NONE


def catch_all_policy(level: str = "Metadata") -> Policy:
    """Every request at `level`."""
    return Policy([Rule(level)])


def _strings(path: str, v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise AuditPolicyError(f"{path}: Invalid value: want a list of strings")
    return tuple(v)


def _stages(path: str, v: Any) -> frozenset[str]:
    out = _strings(path, v)
    for i, s in enumerate(out):
        if s not in STAGES:
            raise AuditPolicyError(
                f'{path}[{i}]: Unsupported value: "{s}": supported values: {", ".join(repr(x) for x in STAGES)}'
            )
    return frozenset(out)


def _rule(path: str, r: Any) -> Rule:
    if not isinstance(r, dict):
        raise AuditPolicyError(f"{path}: Invalid value: a rule is an object")
    level = r.get("level")
    if level not in LEVELS:
        if not level:
            raise AuditPolicyError(f"{path}.level: Required value")
        raise AuditPolicyError(
            f'{path}.level: Unsupported value: "{level}": supported values: {", ".join(repr(x) for x in LEVELS)}'
        )
    resources = []
    for j, gr in enumerate(r.get("resources") or []):
        if not isinstance(gr, dict):
            raise AuditPolicyError(f"{path}.resources[{j}]: Invalid value: want an object")
        group = gr.get("group") or ""
        res = _strings(f"{path}.resources[{j}].resources", gr.get("resources"))
        names = _strings(f"{path}.resources[{j}].resourceNames", gr.get("resourceNames"))
        resources.append(GroupResources(group, res, names))
    nru = _strings(f"{path}.nonResourceURLs", r.get("nonResourceURLs"))
    for j, u in enumerate(nru):
        if not u.startswith("/") or "*" in u[:-1]:
            raise AuditPolicyError(
                f'{path}.nonResourceURLs[{j}]: Invalid value: "{u}": non-resource URL rules must begin with "/" and '
                'may only have a trailing "*"'
            )
    if nru and (resources or r.get("namespaces")):
        raise AuditPolicyError(
            f"{path}.nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs"
        )
    omf = r.get("omitManagedFields")
    return Rule(
        level=level,
        users=_strings(f"{path}.users", r.get("users")),
        user_groups=_strings(f"{path}.userGroups", r.get("userGroups")),
        verbs=_strings(f"{path}.verbs", r.get("verbs")),
        resources=tuple(resources),
        namespaces=_strings(f"{path}.namespaces", r.get("namespaces")),
        non_resource_urls=nru,
        omit_stages=_stages(f"{path}.omitStages", r.get("omitStages")),
        omit_managed_fields=None if omf is None else bool(omf),
    )


def parse_policy(doc: Any) -> Policy:
    if not isinstance(doc, dict):
        raise AuditPolicyError("the file is not an audit Policy object")
    if doc.get("kind") != "Policy" or doc.get("apiVersion") not in _API_VERSIONS:
        raise AuditPolicyError(
            f"apiVersion/kind: Invalid value: {doc.get('apiVersion')!r}/{doc.get('kind')!r}: want apiVersion "
            "audit.k8s.io/v1 and kind Policy"
        )
    rules = doc.get("rules")
    if not isinstance(rules, list) or not rules:
        raise AuditPolicyError("rules: Required value: the policy has no rules (it would audit nothing)")
    return Policy(
        [_rule(f"rules[{i}]", r) for i, r in enumerate(rules)],
        _stages("omitStages", doc.get("omitStages")),
        bool(doc.get("omitManagedFields")),
    )


def load_policy(path: Path) -> Policy:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise AuditPolicyError(f"failed to read file path {path!s}: {e.strerror}") from None
    import yaml  # only with --audit-policy-file: PyYAML is not every apiserver start's cost

    from pykubeadm.util.yamlload import load_yaml

    try:
        doc = load_yaml(raw)
    except yaml.YAMLError as e:
        raise AuditPolicyError(f"failed decoding file {path!s}: {e}") from None
    try:
        return parse_policy(doc)
    except AuditPolicyError as e:
        raise AuditPolicyError(f"invalid audit policy file {path!s}: {e}") from None
