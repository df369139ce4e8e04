"""nodelifecycle + taint-eviction-controller against our apiserver: a Node whose Lease stops renewing turns Unknown,
gets the unreachable taints, its Pods turn not Ready, and Pods are evicted per their tolerations (DefaultTolerationSeconds
admission adds the 300 s ones)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from harness import ControllerManager, wait_until
from lightkube import ApiError, Client
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Event, Namespace, Node, NodeStatus, Pod, PodStatus, ServiceAccount

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"


@pytest.fixture(scope="module")
def admin(api: ApiServer, start_kcm: Callable[..., ControllerManager]) -> Client:
    with pytest.MonkeyPatch.context() as env:  # podgc's 20 s period and 40 s quarantine are constants in kube
        env.setenv("PYKUBEADM_PODGC_PERIOD", "0.5")
        env.setenv("PYKUBEADM_PODGC_QUARANTINE", "1")
        start_kcm(
            extra_flags=[
                "--controllers=nodelifecycle,taint-eviction-controller,podgc,serviceaccount",
                "--node-monitor-period=500ms",
                "--node-monitor-grace-period=3s",
                "--node-startup-grace-period=3s",
                "--terminated-pod-gc-threshold=1",
            ]
        )
    return sync_client(api.kubeconfig())


def stamp(t: datetime | None = None) -> str:
    return (t or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def get_or_none(client: Client, res: type, name: str, ns: str | None = None) -> Any:
    try:
        return client.get(res, name, namespace=ns)
    except ApiError as err:
        if err.status.code == 404:
            return None
        raise


def ready_node(client: Client, name: str, taints: list[dict[str, Any]] | None = None) -> None:
    """Register a Node that posts Ready once and renews its Lease once, like a kubelet that then dies."""
    client.create(Node.from_dict({"metadata": {"name": name}, "spec": {"taints": taints or []}}))
    for _ in range(10):
        body = client.get(Node, name).to_dict()
        body["status"] = {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": stamp(),
                    "lastTransitionTime": stamp(),
                }
            ]
        }
        try:
            client.replace(NodeStatus.from_dict(body), name)
            break
        except ApiError as err:
            if err.status.code != 409:
                raise
    client.create(
        Lease.from_dict(
            {
                "metadata": {"name": name, "namespace": "kube-node-lease"},
                "spec": {
                    "holderIdentity": name,
                    "leaseDurationSeconds": 40,
                    "renewTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                },
            }
        )
    )


def running_pod(
    client: Client, ns: str, name: str, node: str, tolerations: list[dict[str, Any]], phase: str = "Running"
) -> Pod:
    client.create(
        Pod.from_dict(
            {
                "metadata": {"name": name, "namespace": ns},
                "spec": {
                    "nodeName": node or None,
                    "tolerations": tolerations,
                    "containers": [{"name": "c", "image": "busybox"}],
                },
            }
        )
    )
    for _ in range(10):
        body = client.get(Pod, name, namespace=ns).to_dict()
        body["status"] = {
            "phase": phase,
            "podIP": "127.0.30.1",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp()}],
        }
        try:
            return client.replace(PodStatus.from_dict(body), name, namespace=ns)
        except ApiError as err:
            if err.status.code != 409:
                raise
    raise AssertionError("could not write pod status")


def gone_or_deleting(client: Client, name: str, ns: str) -> bool:
    pod = get_or_none(client, Pod, name, ns)
    return pod is None or pod.metadata.deletionTimestamp is not None


def make_namespace(client: Client, ns: str) -> None:
    client.create(Namespace.from_dict({"metadata": {"name": ns}}))
    wait_until(lambda: get_or_none(client, ServiceAccount, "default", ns), 20, interval=0.1, what="default SA")


def test_unreachable_node_taints_and_evictions_by_toleration(admin: Client) -> None:
    ns = "evict"
    make_namespace(admin, ns)
    ready_node(admin, "lost-1")
    unreachable = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}
    running_pod(admin, ns, "short", "lost-1", [{**unreachable, "tolerationSeconds": 2}])
    running_pod(admin, ns, "forever", "lost-1", [unreachable])
    plain = running_pod(admin, ns, "plain", "lost-1", [])
    # DefaultTolerationSeconds admission: 300 s for not-ready and unreachable unless already tolerated
    assert sorted((t.key, t.effect, t.tolerationSeconds) for t in plain.spec.tolerations) == [
        (NOT_READY, "NoExecute", 300),
        (UNREACHABLE, "NoExecute", 300),
    ]
    forever = admin.get(Pod, "forever", namespace=ns)
    assert [(t.key, t.tolerationSeconds) for t in forever.spec.tolerations] == [(UNREACHABLE, None), (NOT_READY, 300)]

    def tainted() -> Any:
        node = admin.get(Node, "lost-1")
        ready = next(c for c in node.status.conditions if c.type == "Ready")
        taints = {(t.key, t.effect): t for t in node.spec.taints or []}
        if ready.status == "Unknown" and (UNREACHABLE, "NoExecute") in taints and (UNREACHABLE, "NoSchedule") in taints:
            return taints[(UNREACHABLE, "NoExecute")]
        return None

    taint = wait_until(tainted, 20, interval=0.1, what="Ready=Unknown and the unreachable taints")
    assert taint.timeAdded is not None

    def not_ready(name: str) -> bool:
        pod = get_or_none(admin, Pod, name, ns)
        return pod is None or any(c.type == "Ready" and c.status == "False" for c in pod.status.conditions or [])

    wait_until(lambda: not_ready("forever") and not_ready("plain"), 20, interval=0.1, what="Pods marked not ready")
    wait_until(lambda: gone_or_deleting(admin, "short", ns), 20, interval=0.1, what="Pod 'short' evicted")
    short = get_or_none(admin, Pod, "short", ns)
    if short is not None:  # still terminating (no kubelet confirms): it carries the taint manager's condition
        cond = next(c for c in short.status.conditions if c.type == "DisruptionTarget")
        assert (cond.status, cond.reason) == ("True", "DeletionByTaintManager")
        assert cond.lastTransitionTime - taint.timeAdded >= timedelta(seconds=2)
    for name in ("forever", "plain"):
        pod = admin.get(Pod, name, namespace=ns)
        assert pod.metadata.deletionTimestamp is None, name

    def event() -> Any:
        return [e for e in admin.list(Event, namespace=ns) if e.reason == "TaintManagerEviction"]

    (ev,) = wait_until(event, 10, interval=0.1, what="TaintManagerEviction event")
    assert ev.message == f"Marking for deletion Pod {ns}/short"
    assert ev.involvedObject.name == "short"


def test_untolerated_noexecute_taint_evicts_at_once(admin: Client) -> None:
    ns = "evict-now"
    make_namespace(admin, ns)
    ready_node(admin, "bad-1", taints=[{"key": "example.com/broken", "effect": "NoExecute", "timeAdded": stamp()}])
    running_pod(admin, ns, "victim", "bad-1", [])
    running_pod(admin, ns, "tolerant", "bad-1", [{"key": "example.com/broken", "operator": "Exists"}])
    wait_until(lambda: gone_or_deleting(admin, "victim", ns), 10, interval=0.1, what="Pod 'victim' evicted")
    assert admin.get(Pod, "tolerant", namespace=ns).metadata.deletionTimestamp is None


def test_podgc_terminated_orphaned_and_out_of_service_pods(admin: Client) -> None:
    ns = "gc"
    make_namespace(admin, ns)
    running_pod(admin, ns, "done-1", "", [], phase="Succeeded")
    running_pod(admin, ns, "done-2", "", [], phase="Failed")
    running_pod(admin, ns, "orphan", "ghost-node", [])
    ready_node(admin, "oos-1", taints=[{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}])
    running_pod(admin, ns, "stuck", "oos-1", [{"operator": "Exists"}])
    # wait for the Node to be not Ready, then delete the Pod: no kubelet will confirm, podgc force-deletes it
    wait_until(
        lambda: any(c.type == "Ready" and c.status != "True" for c in admin.get(Node, "oos-1").status.conditions),
        20,
        interval=0.1,
        what="oos-1 not ready",
    )
    admin.delete(Pod, "stuck", namespace=ns)
    wait_until(
        lambda: get_or_none(admin, Pod, "done-1", ns) is None, 20, interval=0.1, what="oldest terminated Pod gone"
    )
    wait_until(lambda: get_or_none(admin, Pod, "orphan", ns) is None, 20, interval=0.1, what="orphaned Pod gone")
    wait_until(lambda: get_or_none(admin, Pod, "stuck", ns) is None, 20, interval=0.1, what="out-of-service Pod gone")
    assert get_or_none(admin, Pod, "done-2", ns) is not None  # within --terminated-pod-gc-threshold=1
