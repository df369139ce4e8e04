"""Role, ClusterRole, RoleBinding and ClusterRoleBinding strategies (rbac.authorization.k8s.io/v1): rule and roleRef
validation, immutable roleRef, binding tables. Kept in one module because the four kinds share their validators."""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver.printing import AGE_COL, NAME_COL, age, col
from pykubeadm.apiserver.registry.base import Obj, RequestContext, Strategy, field_immutable, required
from pykubeadm.apiserver.status import Cause

__all__ = ["GROUP", "ClusterRoleBindingStrategy", "ClusterRoleStrategy", "RoleBindingStrategy", "RoleStrategy"]

GROUP = "rbac.authorization.k8s.io"


def _validate_rules(obj: Obj, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    rules = obj.get("rules") or []
    if not isinstance(rules, list):
        return [Cause("FieldValueInvalid", "Invalid value: rules must be a list", "rules")]
    for i, r in enumerate(rules):
        if not isinstance(r, dict):
            causes.append(Cause("FieldValueInvalid", "Invalid value: must be an object", f"rules[{i}]"))
            continue
        if not r.get("verbs"):
            causes.append(required(f"rules[{i}].verbs"))
        if r.get("nonResourceURLs"):
            if namespaced:
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {r['nonResourceURLs']}: namespaced rules cannot apply to non-resource URLs",
                        f"rules[{i}].nonResourceURLs",
                    )
                )
            if r.get("apiGroups") or r.get("resources") or r.get("resourceNames"):
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {r['nonResourceURLs']}: rules cannot apply to "
                        "both regular resources and non-resource URLs",
                        f"rules[{i}].nonResourceURLs",
                    )
                )
        else:
            if not r.get("apiGroups"):
                causes.append(required(f"rules[{i}].apiGroups"))
            if not r.get("resources"):
                causes.append(required(f"rules[{i}].resources"))
    return causes


def _validate_binding(obj: Obj, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    ref = obj.get("roleRef")
    if not isinstance(ref, dict):
        return [required("roleRef")]
    allowed = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if ref.get("apiGroup") != GROUP:
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{ref.get("apiGroup", "")}": supported values: "{GROUP}"',
                "roleRef.apiGroup",
            )
        )
    if ref.get("kind") not in allowed:
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{ref.get("kind", "")}": supported values: '
                + ", ".join(f'"{k}"' for k in allowed),
                "roleRef.kind",
            )
        )
    if not ref.get("name"):
        causes.append(required("roleRef.name"))
    for i, s in enumerate(obj.get("subjects") or []):
        if not isinstance(s, dict):
            continue
        if not s.get("name"):
            causes.append(required(f"subjects[{i}].name"))
        kind = s.get("kind")
        if kind not in ("User", "Group", "ServiceAccount"):
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: "{kind}": supported values: "ServiceAccount", "User", "Group"',
                    f"subjects[{i}].kind",
                )
            )
        if kind == "ServiceAccount" and not namespaced and not s.get("namespace"):
            causes.append(required(f"subjects[{i}].namespace"))
    return causes


class RoleStrategy(Strategy):
    top_fields = frozenset({"rules"})
    kind = "Role"
    plural = "roles"
    group = GROUP
    name_rule = "path"

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        return _validate_rules(obj, namespaced=True)


class ClusterRoleStrategy(Strategy):
    top_fields = frozenset({"rules", "aggregationRule"})
    kind = "ClusterRole"
    plural = "clusterroles"
    group = GROUP
    namespaced = False
    name_rule = "path"

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        return _validate_rules(obj, namespaced=False)


class _BindingStrategy(Strategy):
    top_fields = frozenset({"subjects", "roleRef"})
    group = GROUP
    name_rule = "path"

    def validate(self, obj: Obj, ctx: RequestContext) -> list[Cause]:
        return _validate_binding(obj, self.namespaced)

    def validate_update(self, obj: Obj, old: Obj, ctx: RequestContext) -> list[Cause]:
        causes = self.validate(obj, ctx)
        if obj.get("roleRef") != old.get("roleRef"):
            causes.append(field_immutable("roleRef", obj.get("roleRef")))
        return causes

    def table_columns(self) -> list[Obj]:
        return [
            NAME_COL,
            col("Role", "string", "RoleRef is the reference to the role."),
            AGE_COL,
            col("Users", "string", "Users in the binding", priority=1),
            col("Groups", "string", "Groups in the binding", priority=1),
            col("ServiceAccounts", "string", "ServiceAccounts in the binding", priority=1),
        ]

    def table_row(self, obj: Obj) -> list[Any]:
        ref = obj.get("roleRef") or {}
        subjects = obj.get("subjects") or []

        def names(kind: str) -> str:
            out = []
            for s in subjects:
                if s.get("kind") == kind:
                    out.append(
                        f"{s.get('namespace', '')}/{s.get('name')}" if kind == "ServiceAccount" else s.get("name", "")
                    )
            return ", ".join(out)

        return [
            obj["metadata"].get("name", ""),
            f"{ref.get('kind', '')}/{ref.get('name', '')}",
            age(obj),
            names("User"),
            names("Group"),
            names("ServiceAccount"),
        ]


class RoleBindingStrategy(_BindingStrategy):
    kind = "RoleBinding"
    plural = "rolebindings"


class ClusterRoleBindingStrategy(_BindingStrategy):
    kind = "ClusterRoleBinding"
    plural = "clusterrolebindings"
    namespaced = False
