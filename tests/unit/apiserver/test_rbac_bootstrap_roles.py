"""The apiserver's RBAC bootstrap (`reconcile_rbac_policy`) on the SQLite store the apiserver runs on by default: a new
cluster gets every default role and binding; on a restart, drifted rules come back, deleted objects are created again
and objects annotated `rbac.authorization.kubernetes.io/autoupdate: "false"` keep what their owner gave them."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

from pykubeadm.apiserver.authz.bootstrap_policy import default_policy
from pykubeadm.apiserver.bootstrap import AUTOUPDATE, SYSTEM_CTX, reconcile_rbac_policy
from pykubeadm.apiserver.state import ApiState
from pykubeadm.storage import open_store

_RBAC = ".rbac.authorization.k8s.io"
_RESOURCE = {
    "ClusterRole": "clusterroles" + _RBAC,
    "ClusterRoleBinding": "clusterrolebindings" + _RBAC,
    "Role": "roles" + _RBAC,
    "RoleBinding": "rolebindings" + _RBAC,
}


async def _nobody(*_: object) -> None:
    return None


async def _state(path: Path) -> ApiState:
    backend = await open_store(f"sqlite://{path}")
    return ApiState(backend=backend, version_info={}, authenticator=_nobody, authorizer=_nobody)  # type: ignore[arg-type]


def _fields(obj: dict[str, Any]) -> dict[str, Any]:
    keys = ("rules", "aggregationRule") if obj["kind"].endswith("Role") else ("subjects", "roleRef")
    return {k: obj.get(k) for k in keys}


async def _stored(state: ApiState, obj: dict[str, Any]) -> dict[str, Any] | None:
    store = state.store(_RESOURCE[obj["kind"]])
    return await store.try_get(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def test_new_cluster_gets_every_default_role_and_binding(tmp_path: Path) -> None:
    async def scenario() -> None:
        state = await _state(tmp_path / "state.db")
        try:
            await reconcile_rbac_policy(state)
            policy = default_policy()
            assert len(policy) > 100
            for obj in policy:
                stored = await _stored(state, obj)
                assert stored is not None, obj["metadata"]["name"]
                assert _fields(stored) == _fields(obj)
                assert stored["metadata"]["annotations"][AUTOUPDATE] == "true"
        finally:
            await state.backend.close()

    asyncio.run(scenario())


def test_restart_restores_drift_and_keeps_objects_that_opted_out(tmp_path: Path) -> None:
    async def scenario() -> None:
        state = await _state(tmp_path / "state.db")
        roles, bindings = state.store(_RESOURCE["ClusterRole"]), state.store(_RESOURCE["ClusterRoleBinding"])
        try:
            await reconcile_rbac_policy(state)

            def drop_rules(old: dict[str, Any] | None, opt_out: bool = False) -> dict[str, Any]:
                new = copy.deepcopy(old or {})
                new["rules"] = []
                if opt_out:
                    new["metadata"]["annotations"][AUTOUPDATE] = "false"
                return new

            await roles.update("", "system:basic-user", drop_rules, SYSTEM_CTX)
            await roles.update("", "view", lambda old: drop_rules(old, opt_out=True), SYSTEM_CTX)
            await bindings.delete("", "system:public-info-viewer", SYSTEM_CTX, {})
            await state.backend.close()

            state = await _state(tmp_path / "state.db")  # the apiserver starts again on the same database
            roles, bindings = state.store(_RESOURCE["ClusterRole"]), state.store(_RESOURCE["ClusterRoleBinding"])
            await reconcile_rbac_policy(state)
            policy = {(o["kind"], o["metadata"]["name"]): o for o in default_policy()}
            basic = await roles.get("", "system:basic-user")
            assert basic["rules"] == policy["ClusterRole", "system:basic-user"]["rules"] != []
            view = await roles.get("", "view")
            assert view["rules"] == []
            assert view["metadata"]["annotations"][AUTOUPDATE] == "false"
            viewer = await bindings.get("", "system:public-info-viewer")
            assert viewer["subjects"] == policy["ClusterRoleBinding", "system:public-info-viewer"]["subjects"]
        finally:
            await state.backend.close()

    asyncio.run(scenario())


def test_restart_keeps_the_rules_aggregated_into_admin_edit_view(tmp_path: Path) -> None:
    """The clusterrole-aggregation controller owns an aggregated role's rules: a restart puts back only its
    aggregationRule (kube's reconciler), so rules aggregated from other roles do not vanish until the controller
    writes them again."""

    async def scenario() -> None:
        state = await _state(tmp_path / "state.db")
        roles = state.store(_RESOURCE["ClusterRole"])
        try:
            await reconcile_rbac_policy(state)
            extra = {"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["get"]}

            def aggregate(old: dict[str, Any] | None) -> dict[str, Any]:
                new = copy.deepcopy(old or {})
                new["rules"] = [*new["rules"], extra]
                new["aggregationRule"] = {"clusterRoleSelectors": []}
                return new

            await roles.update("", "view", aggregate, SYSTEM_CTX)
            await reconcile_rbac_policy(state)
            view = await roles.get("", "view")
            policy = {(o["kind"], o["metadata"]["name"]): o for o in default_policy()}
            assert view["rules"][-1] == extra
            assert view["aggregationRule"] == policy["ClusterRole", "view"]["aggregationRule"]
        finally:
            await state.backend.close()

    asyncio.run(scenario())
