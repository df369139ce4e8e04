"""The clusterrole-aggregation controller: a ClusterRole with an `aggregationRule` gets as `rules` the union of the
rules of every other ClusterRole its `clusterRoleSelectors` match (roles in name order, each rule once), so `admin`,
`edit` and `view` grow with the roles labelled `rbac.authorization.k8s.io/aggregate-to-<role>: "true"` (an extension
API server's, a CRD's) and shrink when those go.

As in kube every ClusterRole change requeues every aggregated ClusterRole (the set is small and the dependency graph
unknown: `edit` aggregates `view`, which is itself aggregated). Rules are written with an update of the role (kube's
fallback when server-side apply is unavailable); a conflict is retried.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from lightkube.resources.rbac_authorization_v1 import ClusterRole

from pykubeadm.client import ApiError, is_conflict, is_not_found
from pykubeadm.controllers.controllerutil import selector_matches
from pykubeadm.controllers.controllerutil_api import model
from pykubeadm.controllers.runtime import Controller, TemporaryError

__all__ = ["ClusterRoleAggregationController", "aggregated_rules"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def _normal(rule: Obj) -> Obj:
    """A PolicyRule for equality.Semantic.DeepEqual (an empty list equals an absent one)."""
    return {k: v for k, v in rule.items() if v not in (None, [], {})}


def aggregated_rules(role: Obj, roles: Iterable[Obj]) -> list[Obj]:
    """The rules `role`'s aggregationRule selects: for each selector in order, the matching ClusterRoles (but itself)
    in name order, each of their rules not already taken."""
    name = (role.get("metadata") or {}).get("name")
    by_name = sorted(roles, key=lambda r: (r.get("metadata") or {}).get("name", ""))
    out: list[Obj] = []
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []:
        for other in by_name:
            meta = other.get("metadata") or {}
            if meta.get("name") == name or not selector_matches(selector, meta.get("labels")):
                continue
            for rule in other.get("rules") or []:
                rule = _normal(rule)
                if rule not in out:
                    out.append(rule)
    return out


class ClusterRoleAggregationController(Controller):
    name = "clusterrole-aggregation"
    service_account = "clusterrole-aggregation-controller"

    def setup(self) -> None:
        self.roles = self.watch(ClusterRole, self._on_role)

    def _on_role(self, event: str, obj: Any, old: Any) -> None:
        for role in self.roles.items():
            if role.aggregationRule is not None:
                self.queue.add(role.metadata.name)

    async def sync(self, key: Any) -> None:
        role = self.roles.get(key)
        if role is None or role.aggregationRule is None:
            return
        current = role.to_dict()
        rules = aggregated_rules(current, (r.to_dict() for r in self.roles.items()))
        if rules == [_normal(r) for r in current.get("rules") or []]:
            return
        body = dict(current)
        body["rules"] = rules
        try:
            await self.client.replace(model(ClusterRole, body))
        except ApiError as err:
            if is_conflict(err):
                raise TemporaryError(f"ClusterRole {key} changed meanwhile") from err
            if is_not_found(err):
                return
            raise
        log.info("aggregated %d rules into ClusterRole %s", len(rules), key)
