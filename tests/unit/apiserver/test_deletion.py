"""Deletion as kube's generic store does it: propagation finalizers (orphan, foregroundDeletion) from DeleteOptions,
per-kind default policies, removal on the update that clears the finalizers, graceful Pods, Terminating Namespaces."""

from tests.unit.apiserver.kinds_helpers import CTX, store_of, template

from pykubeadm.apiserver.registry.deletion import gc_finalizers


def deploy(name="web"):
    return {
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template()},
    }


def test_gc_finalizers_rules():
    bg = "DeleteDependents"
    assert gc_finalizers(bg, [], {}) == []
    assert gc_finalizers(bg, [], {"propagationPolicy": "Foreground"}) == ["foregroundDeletion"]
    assert gc_finalizers(bg, ["a"], {"propagationPolicy": "Orphan"}) == ["a", "orphan"]
    assert gc_finalizers(bg, [], {"orphanDependents": True}) == ["orphan"]
    assert gc_finalizers(bg, ["orphan"], {"propagationPolicy": "Background"}) == []
    assert gc_finalizers(bg, ["orphan"], {}) == ["orphan"]  # an existing GC finalizer wins over the default
    assert gc_finalizers("OrphanDependents", [], {}) == ["orphan"]  # batch/v1 Jobs
    assert gc_finalizers("OrphanDependents", [], {"propagationPolicy": "Background"}) == []
    assert gc_finalizers("Unsupported", [], {"propagationPolicy": "Orphan"}) == []


async def test_foreground_and_orphan_keep_the_object_until_finalizers_go():
    st = store_of("deployments", "apps")
    await st.create("ns", deploy(), CTX)
    obj, removed = await st.delete("ns", "web", CTX, {"propagationPolicy": "Foreground"})
    assert not removed and obj["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert obj["metadata"]["deletionTimestamp"] and obj["metadata"]["deletionGracePeriodSeconds"] == 0
    assert obj["metadata"]["generation"] == 2
    again, removed = await st.delete("ns", "web", CTX, {"propagationPolicy": "Orphan"})  # switches the policy
    assert not removed and again["metadata"]["finalizers"] == ["orphan"]
    # a status update keeps it; the update that removes the last finalizer deletes it
    await st.update("ns", "web", lambda old: {**old, "status": {"replicas": 0}}, CTX, "status")
    assert await st.try_get("ns", "web") is not None
    await st.update("ns", "web", lambda old: {**old, "metadata": {**old["metadata"], "finalizers": []}}, CTX)
    assert await st.try_get("ns", "web") is None


async def test_background_deletes_now_and_jobs_orphan_by_default():
    deployments = store_of("deployments", "apps")
    await deployments.create("ns", deploy(), CTX)
    _, removed = await deployments.delete("ns", "web", CTX, {})
    assert removed
    jobs = store_of("jobs", "batch")
    body = {"metadata": {"name": "j"}, "spec": {"template": template({}, restartPolicy="Never")}}
    await jobs.create("ns", body, CTX)
    obj, removed = await jobs.delete("ns", "j", CTX, {})
    assert not removed and obj["metadata"]["finalizers"] == ["orphan"]
    await jobs.create("ns", {**body, "metadata": {"name": "k"}}, CTX)
    _, removed = await jobs.delete("ns", "k", CTX, {"propagationPolicy": "Background"})
    assert removed


async def test_user_finalizer_and_dry_run():
    cms = store_of("configmaps", "")
    await cms.create("ns", {"metadata": {"name": "c", "finalizers": ["example.com/x"]}}, CTX)
    from pykubeadm.apiserver.registry import RequestContext

    dry, removed = await cms.delete("ns", "c", RequestContext(dry_run=True), {})
    assert not removed and dry["metadata"]["deletionTimestamp"]
    assert "deletionTimestamp" not in (await cms.get("ns", "c"))["metadata"]
    obj, removed = await cms.delete("ns", "c", CTX, {})
    assert not removed and obj["metadata"]["finalizers"] == ["example.com/x"]
    await cms.update("ns", "c", lambda old: {**old, "metadata": {**old["metadata"], "finalizers": None}}, CTX)
    assert await cms.try_get("ns", "c") is None


async def test_graceful_pod_then_confirmed_by_grace_zero():
    pods = store_of("pods", "")
    spec = {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}
    await pods.create("ns", {"metadata": {"name": "p"}, "spec": spec}, CTX)
    obj, removed = await pods.delete("ns", "p", CTX, {})
    assert not removed and obj["metadata"]["deletionGracePeriodSeconds"] == 30
    # the kubelet's status updates do not remove a Pod in its grace period
    await pods.update("ns", "p", lambda old: {**old, "status": {"phase": "Running"}}, CTX, "status")
    assert await pods.try_get("ns", "p") is not None
    same, removed = await pods.delete("ns", "p", CTX, {})  # no shorter grace period: nothing changes
    assert (
        not removed
        and same["metadata"]["resourceVersion"] == (await pods.get("ns", "p"))["metadata"]["resourceVersion"]
    )
    shorter, removed = await pods.delete("ns", "p", CTX, {"gracePeriodSeconds": 5})
    assert not removed and shorter["metadata"]["deletionGracePeriodSeconds"] == 5
    _, removed = await pods.delete("ns", "p", CTX, {"gracePeriodSeconds": 0})
    assert removed and await pods.try_get("ns", "p") is None


async def test_namespace_terminating_then_gone_when_finalized():
    nss = store_of("namespaces", "")
    await nss.create("", {"metadata": {"name": "x"}}, CTX)
    obj, removed = await nss.delete("", "x", CTX, {"propagationPolicy": "Background"})
    assert not removed and obj["status"]["phase"] == "Terminating" and obj["metadata"]["deletionTimestamp"]
    assert "deletionGracePeriodSeconds" not in obj["metadata"] and obj["spec"]["finalizers"] == ["kubernetes"]
    await nss.update("", "x", lambda old: {**old, "status": {**old["status"], "conditions": []}}, CTX, "status")
    assert await nss.try_get("", "x") is not None
    await nss.update("", "x", lambda old: {**old, "spec": {"finalizers": []}}, CTX, "finalize")
    assert await nss.try_get("", "x") is None
