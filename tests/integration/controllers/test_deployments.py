"""The replicaset and deployment controllers of our kube-controller-manager against our apiserver, driven by kubectl.

No Pod runs: `FakeKubelet` plays the kubelet by marking Pods Running/Ready, so availability advances as on a node.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from harness import ControllerManager, token_request_available, wait_until
from lightkube import Client
from lightkube.resources.apps_v1 import Deployment, ReplicaSet
from lightkube.resources.core_v1 import Event, Pod
from workloads import FakeKubelet, PodWatch, grant_apps_roles_to_kcm_user, ready_count

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

PAUSE = "registry.k8s.io/pause:3.10"
POD_NAME = re.compile(r"^web-([bcdfghjklmnpqrstvwxz2456789]+)-[bcdfghjklmnpqrstvwxz2456789]{5}$")


@pytest.fixture(scope="module")
def kcm(api: ApiServer, start_kcm: Any) -> ControllerManager:
    if not token_request_available(api):
        grant_apps_roles_to_kcm_user(api)
    return start_kcm()  # type: ignore[no-any-return]


@pytest.fixture
def ns(api: ApiServer, kcm: ControllerManager, request: pytest.FixtureRequest) -> Iterator[str]:
    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:50].strip("-")
    api.kubectl("create", "namespace", name)
    api.kubectl("create", "serviceaccount", "default", "-n", name, check=False)
    yield name


@pytest.fixture
def admin(api: ApiServer) -> Client:
    return sync_client(api.kubeconfig())


def pods(admin: Client, ns: str) -> list[Pod]:
    return [p for p in admin.list(Pod, namespace=ns) if not p.metadata.deletionTimestamp]


def deploy(admin: Client, ns: str, name: str = "web") -> Deployment:
    return admin.get(Deployment, name, namespace=ns)


def kubectl_ok(api: ApiServer, *args: str, timeout: float = 90) -> str:
    return api.kubectl(*args, timeout=timeout).stdout


def rollout_status(api: ApiServer, ns: str, what: str = "deployment/web") -> str:
    return kubectl_ok(api, "rollout", "status", what, "-n", ns, "--timeout=60s")


def observed(d: Deployment) -> bool:
    return bool(d.status and d.status.observedGeneration == d.metadata.generation)


def events(admin: Client, ns: str, kind: str, reason: str) -> list[str]:
    return [
        e.message or "" for e in admin.list(Event, namespace=ns) if e.involvedObject.kind == kind and e.reason == reason
    ]


def test_deployment_makes_pods_owned_through_a_replicaset(api: ApiServer, ns: str, admin: Client) -> None:
    kubectl_ok(api, "create", "deployment", "web", f"--image={PAUSE}", "--replicas=3", "-n", ns)
    wait_until(lambda: len(pods(admin, ns)) == 3, 30, what="3 pods")
    d = deploy(admin, ns)
    (rs,) = admin.list(ReplicaSet, namespace=ns)
    hash_ = rs.metadata.labels["pod-template-hash"]
    assert rs.metadata.name == f"web-{hash_}"
    (rs_ref,) = rs.metadata.ownerReferences
    assert (rs_ref.kind, rs_ref.name, rs_ref.uid, rs_ref.controller, rs_ref.blockOwnerDeletion) == (
        "Deployment",
        "web",
        d.metadata.uid,
        True,
        True,
    )
    assert rs.spec.selector.matchLabels == {"app": "web", "pod-template-hash": hash_}
    assert rs.metadata.annotations["deployment.kubernetes.io/revision"] == "1"
    assert rs.metadata.annotations["deployment.kubernetes.io/desired-replicas"] == "3"
    assert rs.metadata.annotations["deployment.kubernetes.io/max-replicas"] == "4"  # 3 + ceil(25% of 3)
    for pod in pods(admin, ns):
        match = POD_NAME.match(pod.metadata.name)
        assert match and match.group(1) == hash_, pod.metadata.name
        (ref,) = pod.metadata.ownerReferences
        assert (ref.kind, ref.name, ref.uid, ref.controller, ref.blockOwnerDeletion) == (
            "ReplicaSet",
            rs.metadata.name,
            rs.metadata.uid,
            True,
            True,
        )
        assert pod.metadata.labels == {"app": "web", "pod-template-hash": hash_}
    assert d.metadata.annotations["deployment.kubernetes.io/revision"] == "1"
    with FakeKubelet(api, ns):
        out = rollout_status(api, ns)
        assert 'deployment "web" successfully rolled out' in out
    d = deploy(admin, ns)
    st = d.status
    assert (st.replicas, st.updatedReplicas, st.readyReplicas, st.availableReplicas) == (3, 3, 3, 3)
    assert st.observedGeneration == d.metadata.generation
    conds = {c.type: c for c in st.conditions}
    assert (conds["Available"].status, conds["Available"].reason) == ("True", "MinimumReplicasAvailable")
    assert conds["Available"].message == "Deployment has minimum availability."
    assert (conds["Progressing"].status, conds["Progressing"].reason) == ("True", "NewReplicaSetAvailable")
    assert conds["Progressing"].message == f'ReplicaSet "{rs.metadata.name}" has successfully progressed.'
    rs = admin.get(ReplicaSet, rs.metadata.name, namespace=ns)
    assert (rs.status.replicas, rs.status.readyReplicas, rs.status.availableReplicas) == (3, 3, 3)
    assert rs.status.fullyLabeledReplicas == 3
    wait_until(lambda: len(events(admin, ns, "ReplicaSet", "SuccessfulCreate")) == 3, 10, what="events")
    assert all(m.startswith("Created pod: web-") for m in events(admin, ns, "ReplicaSet", "SuccessfulCreate"))
    assert events(admin, ns, "Deployment", "ScalingReplicaSet") == [f"Scaled up replica set {rs.metadata.name} to 3"]


def test_rolling_update_keeps_availability_then_undo(api: ApiServer, ns: str, admin: Client) -> None:
    kubectl_ok(api, "create", "deployment", "web", f"--image={PAUSE}", "--replicas=3", "-n", ns)
    patch = {"spec": {"strategy": {"rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}}}
    kubectl_ok(api, "patch", "deployment", "web", "-n", ns, "--type=merge", "-p", json.dumps(patch))
    with FakeKubelet(api, ns):
        rollout_status(api, ns)
        watch = PodWatch(api, ns).start()
        rs_watch = PodWatch(api, ns, ReplicaSet).start()
        kubectl_ok(api, "set", "image", "deployment/web", "pause=registry.k8s.io/pause:3.9", "-n", ns)
        out = rollout_status(api, ns)
        assert 'deployment "web" successfully rolled out' in out
        wait_until(lambda: len(pods(admin, ns)) == 3, 30, what="old pods gone")
        assert watch.min_over(ready_count) >= 2  # replicas - maxUnavailable
        assert rs_watch.snapshots
        surge = rs_watch.max_over(lambda live: sum(r.spec.replicas for r in live.values()))
        assert surge <= 4, "\n".join(events(admin, ns, "Deployment", "ScalingReplicaSet"))  # replicas + maxSurge
        images = {p.spec.containers[0].image for p in pods(admin, ns)}
        assert images == {"registry.k8s.io/pause:3.9"}
        assert deploy(admin, ns).metadata.annotations["deployment.kubernetes.io/revision"] == "2"
        history = kubectl_ok(api, "rollout", "history", "deployment/web", "-n", ns)
        assert re.search(r"^1\s", history, re.M) and re.search(r"^2\s", history, re.M), history
        scaled = events(admin, ns, "Deployment", "ScalingReplicaSet")
        assert any(re.fullmatch(r"Scaled down replica set web-\w+ to \d from \d", m) for m in scaled), scaled

        kubectl_ok(api, "rollout", "undo", "deployment/web", "-n", ns)
        rollout_status(api, ns)
        wait_until(lambda: len(pods(admin, ns)) == 3, 30, what="undo settled")
        assert {p.spec.containers[0].image for p in pods(admin, ns)} == {PAUSE}
    rss = {rs.metadata.name: rs for rs in admin.list(ReplicaSet, namespace=ns)}
    assert len(rss) == 2  # undo reuses the first ReplicaSet
    first = next(rs for rs in rss.values() if rs.spec.template.spec.containers[0].image == PAUSE)
    assert first.spec.replicas == 3
    assert first.metadata.annotations["deployment.kubernetes.io/revision"] == "3"
    assert first.metadata.annotations["deployment.kubernetes.io/revision-history"] == "1"
    assert deploy(admin, ns).metadata.annotations["deployment.kubernetes.io/revision"] == "3"


def test_scale_pause_resume_and_restart(api: ApiServer, ns: str, admin: Client) -> None:
    kubectl_ok(api, "create", "deployment", "web", f"--image={PAUSE}", "--replicas=2", "-n", ns)
    with FakeKubelet(api, ns):
        rollout_status(api, ns)
        kubectl_ok(api, "scale", "deployment/web", "--replicas=5", "-n", ns)
        wait_until(lambda: len(pods(admin, ns)) == 5, 30, what="5 pods")
        rollout_status(api, ns)
        kubectl_ok(api, "scale", "deployment/web", "--replicas=1", "-n", ns)
        wait_until(lambda: len(pods(admin, ns)) == 1, 30, what="1 pod")
        (rs,) = admin.list(ReplicaSet, namespace=ns)
        assert rs.metadata.annotations["deployment.kubernetes.io/desired-replicas"] == "1"

        kubectl_ok(api, "rollout", "pause", "deployment/web", "-n", ns)
        wait_until(
            lambda: any(c.reason == "DeploymentPaused" for c in deploy(admin, ns).status.conditions or []),
            30,
            what="Progressing/DeploymentPaused",
        )
        kubectl_ok(api, "set", "image", "deployment/web", "pause=registry.k8s.io/pause:3.9", "-n", ns)
        # a paused Deployment observes the change but does not roll
        wait_until(lambda: observed(deploy(admin, ns)), 30, what="paused change observed")
        assert len(list(admin.list(ReplicaSet, namespace=ns))) == 1
        assert {p.spec.containers[0].image for p in pods(admin, ns)} == {PAUSE}
        kubectl_ok(api, "rollout", "resume", "deployment/web", "-n", ns)
        rollout_status(api, ns)
        assert {p.spec.containers[0].image for p in pods(admin, ns)} == {"registry.k8s.io/pause:3.9"}

        kubectl_ok(api, "rollout", "restart", "deployment/web", "-n", ns)
        rollout_status(api, ns)
        assert len(list(admin.list(ReplicaSet, namespace=ns))) == 3
        assert deploy(admin, ns).metadata.annotations["deployment.kubernetes.io/revision"] == "3"

        # old ReplicaSets beyond revisionHistoryLimit are deleted, the oldest first
        kubectl_ok(
            api, "patch", "deployment/web", "-n", ns, "--type=merge", "-p", '{"spec":{"revisionHistoryLimit":1}}'
        )
        wait_until(lambda: len(list(admin.list(ReplicaSet, namespace=ns))) == 2, 30, what="history cleaned up")
        revisions = sorted(
            rs.metadata.annotations["deployment.kubernetes.io/revision"] for rs in admin.list(ReplicaSet, namespace=ns)
        )
        assert revisions == ["2", "3"]


def test_recreate_never_runs_old_and_new_together(api: ApiServer, ns: str, admin: Client) -> None:
    kubectl_ok(api, "create", "deployment", "web", f"--image={PAUSE}", "--replicas=2", "-n", ns)
    kubectl_ok(
        api,
        "patch",
        "deployment",
        "web",
        "-n",
        ns,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}}),
    )
    with FakeKubelet(api, ns):
        rollout_status(api, ns)
        watch = PodWatch(api, ns).start()
        kubectl_ok(api, "set", "image", "deployment/web", "pause=registry.k8s.io/pause:3.9", "-n", ns)
        rollout_status(api, ns)
        wait_until(lambda: len(pods(admin, ns)) == 2, 30, what="2 new pods")

    def mixed(live: dict[str, Pod]) -> int:
        return len({p.spec.containers[0].image for p in live.values()})

    assert watch.max_over(mixed) == 1
    assert {p.spec.containers[0].image for p in pods(admin, ns)} == {"registry.k8s.io/pause:3.9"}


def test_replicaset_burst_never_overshoots(api: ApiServer, ns: str, admin: Client) -> None:
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "burst", "namespace": ns},
        "spec": {
            "replicas": 40,
            "selector": {"matchLabels": {"app": "burst"}},
            "template": {
                "metadata": {"labels": {"app": "burst"}},
                "spec": {"containers": [{"name": "c", "image": PAUSE}]},
            },
        },
    }
    watch = PodWatch(api, ns).start()
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump(rs))
    # poke the ReplicaSet while it scales up: every update triggers a sync that must wait for its expectations
    for i in range(15):
        api.kubectl("annotate", "rs", "burst", "-n", ns, f"poke={i}", "--overwrite")
    wait_until(lambda: admin.get(ReplicaSet, "burst", namespace=ns).status.replicas == 40, 60, what="40 replicas")
    assert len(pods(admin, ns)) == 40
    with watch.lock:
        assert len(watch.ever) == 40  # never one Pod too many, even for a moment
    rs_obj = admin.get(ReplicaSet, "burst", namespace=ns)
    assert rs_obj.status.observedGeneration == rs_obj.metadata.generation
    kubectl_ok(api, "scale", "rs/burst", "--replicas=3", "-n", ns)
    wait_until(lambda: len(pods(admin, ns)) == 3, 60, what="scaled down to 3")
    assert len(events(admin, ns, "ReplicaSet", "SuccessfulDelete")) >= 1


def replicaset(ns: str, name: str, replicas: int, **pod_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": PAUSE}], **pod_spec},
            },
        },
    }


def test_replicaset_adopts_and_releases_pods(api: ApiServer, ns: str, admin: Client) -> None:
    orphan = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "orphan", "namespace": ns, "labels": {"app": "adopt"}},
        "spec": {"containers": [{"name": "c", "image": PAUSE}]},
    }
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump(orphan))
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump(replicaset(ns, "adopt", 2)))
    wait_until(lambda: admin.get(ReplicaSet, "adopt", namespace=ns).status.replicas == 2, 30, what="2 replicas")
    rs_uid = admin.get(ReplicaSet, "adopt", namespace=ns).metadata.uid
    (ref,) = admin.get(Pod, "orphan", namespace=ns).metadata.ownerReferences
    assert (ref.kind, ref.uid, ref.controller) == ("ReplicaSet", rs_uid, True)
    assert len(pods(admin, ns)) == 2  # the adopted Pod counts: only one was created
    # relabelled out of the selector: released, and replaced
    api.kubectl("label", "pod", "orphan", "-n", ns, "app=other", "--overwrite")
    wait_until(lambda: not admin.get(Pod, "orphan", namespace=ns).metadata.ownerReferences, 30, what="released")
    wait_until(
        lambda: len([p for p in pods(admin, ns) if p.metadata.labels["app"] == "adopt"]) == 2, 30, what="replaced"
    )


def test_create_errors_set_replica_failure_until_fixed(api: ApiServer, ns: str, admin: Client) -> None:
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump(replicaset(ns, "fail", 2, serviceAccountName="missing")))

    def failure() -> Any:
        conds = admin.get(ReplicaSet, "fail", namespace=ns).status.conditions or []
        return next((c for c in conds if c.type == "ReplicaFailure"), None)

    cond = wait_until(failure, 30, what="ReplicaFailure")
    assert (cond.status, cond.reason) == ("True", "FailedCreate")
    assert "missing" in cond.message
    failed = wait_until(lambda: events(admin, ns, "ReplicaSet", "FailedCreate"), 30, what="FailedCreate event")
    assert failed[0].startswith("Error creating: ") and "missing" in failed[0]

    api.kubectl("create", "serviceaccount", "missing", "-n", ns)
    wait_until(lambda: len(pods(admin, ns)) == 2, 60, what="pods once the ServiceAccount exists")
    wait_until(lambda: failure() is None, 30, what="ReplicaFailure cleared")


def test_progress_deadline_exceeded(api: ApiServer, ns: str, admin: Client) -> None:
    kubectl_ok(api, "create", "deployment", "web", f"--image={PAUSE}", "--replicas=1", "-n", ns)
    kubectl_ok(
        api, "patch", "deployment", "web", "-n", ns, "--type=merge", "-p", '{"spec":{"progressDeadlineSeconds":2}}'
    )

    def timed_out() -> Any:
        conds = deploy(admin, ns).status.conditions or []
        return next((c for c in conds if c.type == "Progressing" and c.reason == "ProgressDeadlineExceeded"), None)

    cond = wait_until(timed_out, 30, what="ProgressDeadlineExceeded")  # no kubelet: the Pod never gets ready
    assert cond.status == "False" and cond.message.endswith("has timed out progressing.")
    available = next(c for c in deploy(admin, ns).status.conditions if c.type == "Available")
    assert (available.status, available.reason) == ("False", "MinimumReplicasUnavailable")
    res = api.kubectl("rollout", "status", "deployment/web", "-n", ns, "--timeout=30s", check=False)
    assert res.returncode != 0 and 'deployment "web" exceeded its progress deadline' in res.stderr


def test_min_ready_seconds_delays_availability(api: ApiServer, ns: str, admin: Client) -> None:
    kubectl_ok(api, "create", "deployment", "web", f"--image={PAUSE}", "--replicas=2", "-n", ns)
    kubectl_ok(api, "patch", "deployment/web", "-n", ns, "--type=merge", "-p", '{"spec":{"minReadySeconds":2}}')
    with FakeKubelet(api, ns):
        wait_until(lambda: (deploy(admin, ns).status.readyReplicas or 0) == 2, 30, what="ready")
        # ready is not yet available; with no further event the controllers come back after minReadySeconds
        wait_until(lambda: (deploy(admin, ns).status.availableReplicas or 0) == 2, 30, what="available")
        rollout_status(api, ns)
