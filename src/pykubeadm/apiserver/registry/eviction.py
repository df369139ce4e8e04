"""The `pods/eviction` subresource's logic (kube-apiserver's EvictionREST): delete a Pod unless that would violate its
PodDisruptionBudget. Called by handlers/eviction.py with the Pod and PodDisruptionBudget stores.

- A terminal (Succeeded/Failed), Pending or already terminating Pod is deleted without looking at budgets.
- No budget selects the Pod: it is deleted. More than one: 500, which the subresource does not support.
- One budget: an unready Pod is deleted without spending the budget when the budget is healthy (currentHealthy >=
  desiredHealthy > 0) or its unhealthyPodEvictionPolicy is AlwaysAllow (the delete then carries the Pod's
  resourceVersion as a precondition, and a conflict answers 429 so clients retry). Otherwise the budget must be
  current (status.observedGeneration >= metadata.generation) and allow a disruption: status.disruptionsAllowed is
  decremented and the Pod recorded in status.disruptedPods in one /status update (a conflict re-reads and retries),
  then the Pod is deleted. A budget at 0 or not yet processed answers 429 TooManyRequests with a DisruptionBudget cause.
"""

from __future__ import annotations

from typing import Any

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.printing import now_rfc3339
from pykubeadm.apiserver.registry.base import Obj, RequestContext
from pykubeadm.apiserver.registry.poddisruptionbudget import pdb_selects
from pykubeadm.apiserver.registry.store import Store

__all__ = ["MAX_DISRUPTED_PODS", "evict", "too_many_requests"]

#: Budgets with more recorded, unconfirmed evictions than this refuse new ones (MaxDisruptedPodSize).
MAX_DISRUPTED_PODS = 2000
_RETRIES = 20
_VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
_SUCCESS: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}


def too_many_requests(cause: str, retry_after: int) -> st.ApiError:
    """kube's NewTooManyRequests with the budget's DisruptionBudget cause."""
    details: dict[str, Any] = {"retryAfterSeconds": retry_after} if retry_after else {}
    return st.ApiError(429, "TooManyRequests", _VIOLATION, details, causes=[st.Cause("DisruptionBudget", cause)])


def _pod_ready(pod: Obj) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def _can_ignore_budget(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(pod["metadata"].get("deletionTimestamp"))


def _with_rv_precondition(options: Obj, rv: str) -> Obj:
    return {**options, "preconditions": {**(options.get("preconditions") or {}), "resourceVersion": rv}}


def _rv_unset(options: Obj) -> bool:
    return not (options.get("preconditions") or {}).get("resourceVersion")


def _decremented(pdb: Obj, pod_name: str, dry_run: bool) -> Obj:
    """checkAndDecrement: the budget's new status, or a 429/403 ApiError."""
    name, status = pdb["metadata"]["name"], dict(pdb.get("status") or {})
    if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
        raise too_many_requests(f"The disruption budget {name} is still being processed by the server.", 10)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise st.forbidden("poddisruptionbudget", "policy", name, "pdb disruptions allowed is negative")
    disrupted = dict(status.get("disruptedPods") or {})
    if len(disrupted) > MAX_DISRUPTED_PODS:
        raise st.forbidden(
            "poddisruptionbudget",
            "policy",
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        )
    if allowed == 0:
        raise too_many_requests(
            f"The disruption budget {name} needs {status.get('desiredHealthy', 0)} healthy pods and has "
            f"{status.get('currentHealthy', 0)} currently",
            0,
        )
    status["disruptionsAllowed"] = allowed - 1
    if allowed - 1 == 0:
        _set_insufficient(status)
    if not dry_run:
        disrupted[pod_name] = now_rfc3339()
        status["disruptedPods"] = disrupted
    return status


def _set_insufficient(status: Obj) -> None:
    """UpdateDisruptionAllowedCondition with no disruptions left: DisruptionAllowed=False, InsufficientPods."""
    conds = [dict(c) for c in status.get("conditions") or []]
    cur = next((c for c in conds if c.get("type") == "DisruptionAllowed"), None)
    if cur is None:
        cur = {"type": "DisruptionAllowed"}
        conds.append(cur)
    if cur.get("status") != "False" or "lastTransitionTime" not in cur:
        cur["lastTransitionTime"] = now_rfc3339()
    cur.update(
        status="False",
        reason="InsufficientPods",
        message=cur.get("message", ""),
        observedGeneration=status.get("observedGeneration", 0),
    )
    status["conditions"] = conds


async def _spend_budget(pdbs: Store, pdb: Obj, pod_name: str, ctx: RequestContext) -> None:
    """Decrement the budget in one /status update; on a conflict re-read it and decide again."""
    ns, name = pdb["metadata"]["namespace"], pdb["metadata"]["name"]
    for attempt in range(_RETRIES):
        if attempt:
            pdb = await pdbs.get(ns, name)
        status = _decremented(pdb, pod_name, ctx.dry_run)
        desired = {**pdb, "status": status}

        def transform(_old: Obj | None, d: Obj = desired) -> Obj:
            return d

        try:
            await pdbs.update(ns, name, transform, ctx, "status")
            return
        except st.ApiError as e:
            if e.code != 409:
                raise
    raise st.ApiError(
        504,
        "Timeout",
        f'Timeout: couldn\'t update PodDisruptionBudget "{name}" due to conflicts',
        {"retryAfterSeconds": 10},
    )


async def evict(pods: Store, pdbs: Store, namespace: str, name: str, options: Obj, ctx: RequestContext) -> Obj:
    """Evict Pod `namespace/name` with the Eviction's DeleteOptions; returns the Success Status (201 on the wire)."""
    for _ in range(_RETRIES):
        pod = await pods.get(namespace, name)
        if not _can_ignore_budget(pod):
            break
        opts = options
        phase = (pod.get("status") or {}).get("phase")
        enforce = phase == "Pending" and not pod["metadata"].get("deletionTimestamp")
        if enforce and _rv_unset(options):
            opts = _with_rv_precondition(options, pod["metadata"]["resourceVersion"])
        try:
            await pods.delete(namespace, name, ctx, opts)
            return dict(_SUCCESS)
        except st.ApiError as e:
            if e.code != 409 or not _rv_unset(options):
                raise
    else:
        raise st.conflict("pods", "", name, st.OPTIMISTIC_LOCK_MSG)
    page = await pdbs.list(namespace)
    matching = [p for p in page.items if pdb_selects(p, pod["metadata"].get("labels"))]
    if len(matching) > 1:
        raise st.ApiError(
            500, "", "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
        )
    unready_ok = False
    if matching:
        pdb = matching[0]
        spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
        if not _pod_ready(pod):
            desired, current = int(status.get("desiredHealthy") or 0), int(status.get("currentHealthy") or 0)
            unready_ok = spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow" or (0 < desired <= current)
        if not unready_ok:
            await _spend_budget(pdbs, pdb, name, ctx)
    opts = options
    if unready_ok:
        opts = _with_rv_precondition(options, pod["metadata"]["resourceVersion"])
    try:
        await pods.delete(namespace, name, ctx, opts)
    except st.ApiError as e:
        if e.code == 409 and unready_ok and _rv_unset(options):
            raise too_many_requests(
                f"The disruption budget {matching[0]['metadata']['name']} is still being processed by the server.", 10
            ) from None
        raise
    return dict(_SUCCESS)
