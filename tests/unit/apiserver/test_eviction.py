"""The pods/eviction logic over real registry stores (in-memory engine): budgets spent, 429s worded as kube's, the
more-than-one-budget 500, and the Pods that are evicted without a budget check."""

import pytest
from tests.unit.apiserver.kinds_helpers import CTX, store_of

from pykubeadm.apiserver.registry import RequestContext
from pykubeadm.apiserver.registry.eviction import evict
from pykubeadm.apiserver.status import ApiError
from pykubeadm.storage.memory import MemoryStore


def running_pod(name="p1", ready=True, labels=None):
    return {
        "metadata": {"name": name, "labels": labels if labels is not None else {"app": "db"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


@pytest.fixture
async def stores():
    backend = MemoryStore()
    return store_of("pods", "", backend), store_of("poddisruptionbudgets", "policy", backend)


async def make_pod(pods, name="p1", phase="Running", ready=True, labels=None):
    await pods.create("ns", running_pod(name, labels=labels), CTX)
    conds = [{"type": "Ready", "status": "True" if ready else "False"}]
    await pods.update("ns", name, lambda old: {**old, "status": {"phase": phase, "conditions": conds}}, CTX, "status")


async def make_pdb(pdbs, name="db", allowed=1, current=2, desired=1, observed=1, selector=None, **spec):
    sel = {"matchLabels": {"app": "db"}} if selector is None else selector
    await pdbs.create("ns", {"metadata": {"name": name}, "spec": {"selector": sel, "minAvailable": 1, **spec}}, CTX)
    status = {
        "disruptionsAllowed": allowed,
        "currentHealthy": current,
        "desiredHealthy": desired,
        "expectedPods": current,
        "observedGeneration": observed,
    }
    await pdbs.update("ns", name, lambda old: {**old, "status": status}, CTX, "status")


async def test_no_budget_deletes_the_pod(stores):
    pods, pdbs = stores
    await make_pod(pods)
    assert (await evict(pods, pdbs, "ns", "p1", {}, CTX))["status"] == "Success"
    assert await pods.try_get("ns", "p1") is None


async def test_budget_is_spent_and_pod_recorded(stores):
    pods, pdbs = stores
    await make_pod(pods)
    await make_pdb(pdbs)
    await evict(pods, pdbs, "ns", "p1", {}, CTX)
    pdb = await pdbs.get("ns", "db")
    assert pdb["status"]["disruptionsAllowed"] == 0 and "p1" in pdb["status"]["disruptedPods"]
    cond = pdb["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("DisruptionAllowed", "False", "InsufficientPods")
    assert await pods.try_get("ns", "p1") is None


async def test_budget_at_zero_is_429_and_pod_stays(stores):
    pods, pdbs = stores
    await make_pod(pods)
    await make_pdb(pdbs, allowed=0, current=1, desired=1)
    with pytest.raises(ApiError) as e:
        await evict(pods, pdbs, "ns", "p1", {}, CTX)
    err = e.value.to_status()
    assert (err["code"], err["reason"]) == (429, "TooManyRequests")
    assert err["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert err["details"]["causes"] == [
        {"reason": "DisruptionBudget", "message": "The disruption budget db needs 1 healthy pods and has 1 currently"}
    ]
    assert await pods.try_get("ns", "p1") is not None


async def test_unprocessed_budget_is_429_with_retry_after(stores):
    pods, pdbs = stores
    await make_pod(pods)
    await make_pdb(pdbs, observed=0)
    with pytest.raises(ApiError) as e:
        await evict(pods, pdbs, "ns", "p1", {}, CTX)
    assert e.value.code == 429 and e.value.details == {"retryAfterSeconds": 10}
    assert e.value.causes[0].message == "The disruption budget db is still being processed by the server."


async def test_two_budgets_is_500(stores):
    pods, pdbs = stores
    await make_pod(pods)
    await make_pdb(pdbs, "a")
    await make_pdb(pdbs, "b", selector={})  # policy/v1: an empty selector covers every Pod
    with pytest.raises(ApiError) as e:
        await evict(pods, pdbs, "ns", "p1", {}, CTX)
    assert e.value.code == 500
    assert e.value.message == (
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    )


async def test_pods_evicted_without_spending_the_budget(stores):
    pods, pdbs = stores
    await make_pdb(pdbs, allowed=0, current=2, desired=1)
    await make_pod(pods, "done", phase="Succeeded")
    await make_pod(pods, "pending", phase="Pending", ready=False)
    await make_pod(pods, "unready", ready=False)  # the budget is healthy (2 >= 1): an unready Pod may go
    for name in ("done", "pending", "unready"):
        await evict(pods, pdbs, "ns", name, {}, CTX)
        assert await pods.try_get("ns", name) is None
    assert (await pdbs.get("ns", "db"))["status"]["disruptionsAllowed"] == 0


async def test_dry_run_and_delete_options(stores):
    pods, pdbs = stores
    await make_pod(pods)
    await make_pdb(pdbs)
    await evict(pods, pdbs, "ns", "p1", {"dryRun": ["All"]}, RequestContext(dry_run=True))
    assert await pods.try_get("ns", "p1") is not None
    assert (await pdbs.get("ns", "db"))["status"]["disruptionsAllowed"] == 1
    with pytest.raises(ApiError) as e:
        await evict(pods, pdbs, "ns", "p1", {"preconditions": {"uid": "other"}}, CTX)
    assert e.value.code == 409
