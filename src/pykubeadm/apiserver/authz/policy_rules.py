"""Builders and verb sets for the default RBAC policy tables (bootstrap_policy.py, controller_policy.py)."""

from __future__ import annotations

from typing import Any

__all__ = ["EVENTS_RULES", "READ", "WRITE", "nr", "r"]

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]


def r(verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None) -> dict[str, Any]:
    """A resource PolicyRule."""
    rule: dict[str, Any] = {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}
    if names:
        rule["resourceNames"] = list(names)
    return rule


def nr(verbs: list[str], urls: list[str]) -> dict[str, Any]:
    """A non-resource PolicyRule."""
    return {"verbs": list(verbs), "nonResourceURLs": list(urls)}


#: The events rule most components get (core and events.k8s.io).
EVENTS_RULES = [r(["create", "update", "patch"], ["", "events.k8s.io"], ["events"])]
