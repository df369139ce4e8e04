"""What kube-apiserver creates and maintains by itself: the built-in namespaces, the system PriorityClasses, the
`kubernetes` Service and Endpoints, the default RBAC policy, and namespace termination (content removal, then the
`kubernetes` finalizer) so `kubectl delete ns` completes without a controller manager.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from typing import Any

from pykubeadm import constants as c
from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.registry import STRATEGIES, RequestContext
from pykubeadm.apiserver.registry.priorityclass import SYSTEM_CLASSES
from pykubeadm.apiserver.selectors import FieldSelector, LabelSelector
from pykubeadm.apiserver.state import ApiState

log = logging.getLogger("pykubeadm.apiserver.bootstrap")
Obj = dict[str, Any]

SYSTEM_CTX = RequestContext()
BUILTIN_NAMESPACES = (c.NAMESPACE_DEFAULT, c.NAMESPACE_SYSTEM, c.NAMESPACE_PUBLIC, c.NAMESPACE_NODE_LEASE)
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"


async def _ensure(state: ApiState, resource: str, namespace: str, obj: Obj) -> None:
    store = state.store(resource)
    with contextlib.suppress(st.ApiError):
        if await store.try_get(namespace, obj["metadata"]["name"]) is None:
            await store.create(namespace, obj, SYSTEM_CTX)


async def ensure_builtin_objects(state: ApiState, advertise_address: str, secure_port: int, service_ip: str) -> None:
    for ns in BUILTIN_NAMESPACES:
        await _ensure(state, "namespaces", "", {"metadata": {"name": ns}})
    for name, (value, desc) in SYSTEM_CLASSES.items():
        await _ensure(
            state,
            "priorityclasses.scheduling.k8s.io",
            "",
            {"metadata": {"name": name}, "value": value, "description": desc, "globalDefault": False},
        )
    await _ensure(
        state,
        "services",
        c.NAMESPACE_DEFAULT,
        {
            "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {
                "type": "ClusterIP",
                "clusterIP": service_ip,
                "sessionAffinity": "None",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": secure_port}],
            },
        },
    )
    if advertise_address:
        await _ensure_endpoint(state, advertise_address, secure_port)


async def _ensure_endpoint(state: ApiState, address: str, port: int) -> None:
    """Add this apiserver's address to default/kubernetes Endpoints (other control-plane members keep theirs)."""
    store = state.store("endpoints")
    ports = [{"name": "https", "port": port, "protocol": "TCP"}]
    mine = {"ip": address}

    def merge(old: Obj | None) -> Obj:
        new = copy.deepcopy(old or {})
        new["metadata"].pop("resourceVersion", None)
        subsets = new.get("subsets") or [{"addresses": [], "ports": ports}]
        addrs = subsets[0].setdefault("addresses", [])
        if all(a.get("ip") != address for a in addrs):
            addrs.append(mine)
            addrs.sort(key=lambda a: a.get("ip", ""))
        subsets[0]["ports"] = ports
        new["subsets"] = subsets[:1]
        return new

    meta = {"name": "kubernetes", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}}
    if await store.try_get(c.NAMESPACE_DEFAULT, "kubernetes") is None:
        await _ensure(
            state,
            "endpoints",
            c.NAMESPACE_DEFAULT,
            {"metadata": meta, "subsets": [{"addresses": [mine], "ports": ports}]},
        )
    else:
        with contextlib.suppress(st.ApiError):
            await store.update(c.NAMESPACE_DEFAULT, "kubernetes", merge, SYSTEM_CTX)


def _resource_of(obj: Obj) -> str:
    return {
        "ClusterRole": "clusterroles",
        "ClusterRoleBinding": "clusterrolebindings",
        "Role": "roles",
        "RoleBinding": "rolebindings",
    }[obj["kind"]] + ".rbac.authorization.k8s.io"


async def reconcile_rbac_policy(state: ApiState) -> None:
    """Create the default roles and bindings that are missing and put back the rules (or subjects and roleRef) of those
    that drifted, unless annotated `rbac.authorization.kubernetes.io/autoupdate: "false"`. The objects are reconciled
    concurrently: the store commits concurrent writes together, one transaction for the ~120 objects of a new cluster
    rather than one each."""
    try:
        from pykubeadm.apiserver.authz.bootstrap_policy import default_policy
    except ImportError:
        return
    await asyncio.gather(*(_reconcile_policy_object(state, obj) for obj in default_policy()))


async def _reconcile_policy_object(state: ApiState, obj: Obj) -> None:
    store = state.store(_resource_of(obj))
    ns = obj["metadata"].get("namespace", "")
    cur = await store.try_get(ns, obj["metadata"]["name"])
    if cur is None:
        with contextlib.suppress(st.ApiError):
            await store.create(ns, obj, SYSTEM_CTX)  # default_policy's objects are fresh; create copies its input
        return
    if (cur["metadata"].get("annotations") or {}).get(AUTOUPDATE) == "false":
        return
    fields: tuple[str, ...] = ("rules", "aggregationRule") if obj["kind"].endswith("Role") else ("subjects", "roleRef")
    if obj.get("aggregationRule") and cur.get("aggregationRule"):
        fields = ("aggregationRule",)  # the clusterrole-aggregation controller owns the rules (kube's reconciler)
    if all(cur.get(f) == obj.get(f) for f in fields):
        return

    def merge(old: Obj | None) -> Obj:
        new = copy.deepcopy(old or {})
        new["metadata"].pop("resourceVersion", None)
        for f in fields:
            if f in obj:
                new[f] = copy.deepcopy(obj[f])
        return new

    with contextlib.suppress(st.ApiError):
        await store.update(ns, obj["metadata"]["name"], merge, SYSTEM_CTX)


async def _finalize_namespace(state: ApiState, ns: Obj) -> None:
    name = ns["metadata"]["name"]
    remaining = 0
    for s in STRATEGIES:
        if not s.namespaced or s.storage_version:  # another version's store holds the objects
            continue
        store = state.store(s.resource_name)
        for obj in (await store.list(name)).items:
            remaining += 1
            with contextlib.suppress(st.ApiError):
                await store.delete(name, obj["metadata"]["name"], SYSTEM_CTX, {"gracePeriodSeconds": 0})
    if remaining:
        return  # look again on the next pass (objects with finalizers may stay a while)

    def drop_finalizer(old: Obj | None) -> Obj:
        new = copy.deepcopy(old or {})
        fins = [f for f in (new.get("spec") or {}).get("finalizers") or [] if f != "kubernetes"]
        new["spec"] = {"finalizers": fins} if fins else {}
        new["metadata"].pop("resourceVersion", None)
        return new

    with contextlib.suppress(st.ApiError):
        await state.store("namespaces").update("", name, drop_finalizer, SYSTEM_CTX, "finalize")


async def namespace_controller(state: ApiState, interval: float = 1.0) -> None:
    """Finish terminating namespaces: delete their content, then remove the `kubernetes` finalizer."""
    store = state.store("namespaces")
    while True:
        try:
            page = await store.list(None)
            for ns in page.items:
                if ns["metadata"].get("deletionTimestamp") and "kubernetes" in (
                    (ns.get("spec") or {}).get("finalizers") or []
                ):
                    await _finalize_namespace(state, ns)
            start = int(page.resource_version) + 1
            # Wake on the next namespace change, or after `interval` to retry leftovers.
            # (the watcher itself: a cancelled wait_for() around an async generator's __anext__ could leave the
            # apiserver's shutdown waiting for this task for ever)
            w = await store.open_watch(None, start, LabelSelector(), FieldSelector())
            try:
                await w.wait(interval if _any_terminating(page.items) else 30)
            finally:
                w.close()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("namespace controller error", exc_info=True)
            await asyncio.sleep(interval)


def _any_terminating(items: list[Obj]) -> bool:
    return any(ns["metadata"].get("deletionTimestamp") for ns in items)
