"""The daemonset controller with our scheduler: one Pod per eligible Node, bound through the default scheduler, then
a rolling update, revisions and `kubectl rollout status|history` — all against our apiserver."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from harness import ControllerManager, token_request_available, wait_until
from lightkube import Client
from lightkube.resources.apps_v1 import ControllerRevision, DaemonSet
from lightkube.resources.core_v1 import Pod
from test_scheduler import scheduler  # noqa: F401  (the scheduler process fixture)
from workloads import FakeKubelet, add_ready_node, grant_apps_roles_to_kcm_user

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

NS = "kube-system"
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
DEFAULT_TOLERATIONS = {
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ("node.kubernetes.io/network-unavailable", "NoSchedule"),  # hostNetwork
}


def daemonset(image: str = "registry.k8s.io/kube-proxy:v1.33.0") -> dict[str, Any]:
    """Shaped like kubeadm's kube-proxy DaemonSet: hostNetwork, tolerates everything via `operator: Exists`? No —
    only the control-plane taint, so the tolerations under test are the ones the controller adds."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "proxy", "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"k8s-app": "proxy"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"k8s-app": "proxy"}},
                "spec": {
                    "hostNetwork": True,
                    "tolerations": [
                        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
                    ],
                    "containers": [{"name": "proxy", "image": image}],
                },
            },
        },
    }


@pytest.fixture(scope="module")
def kcm(api: ApiServer, start_kcm: Any) -> ControllerManager:
    if not token_request_available(api):
        grant_apps_roles_to_kcm_user(api)
    # no Node heartbeats here: keep the node lifecycle and taint eviction controllers out of the picture
    return start_kcm(extra_flags=["--controllers=*,-nodelifecycle,-taint-eviction-controller"])  # type: ignore[no-any-return]


def daemon_pods(admin: Client) -> list[Pod]:
    return [p for p in admin.list(Pod, namespace=NS, labels={"k8s-app": "proxy"}) if not p.metadata.deletionTimestamp]


def affinity_node(pod: Pod) -> str:
    (term,) = pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms
    (field,) = term.matchFields
    assert (field.key, field.operator) == ("metadata.name", "In")
    (node,) = field.values
    return str(node)


def test_daemonset_one_pod_per_node_through_the_scheduler(
    api: ApiServer,
    kcm: ControllerManager,
    scheduler: Any,  # noqa: F811
) -> None:
    admin = sync_client(api.kubeconfig())
    add_ready_node(admin, "ds-cp", taints=[CONTROL_PLANE_TAINT])
    add_ready_node(admin, "ds-w1")
    add_ready_node(admin, "ds-w2")
    add_ready_node(
        admin, "ds-off", labels={"x": "y"}, taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    )
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump(daemonset()))

    def bound() -> dict[str, Pod] | None:
        current = daemon_pods(admin)
        if len(current) == 3 and all(p.spec.nodeName for p in current):
            return {p.spec.nodeName: p for p in current}
        return None

    by_node = wait_until(bound, 30, what="3 daemon pods bound")
    assert set(by_node) == {"ds-cp", "ds-w1", "ds-w2"}  # ds-off's taint is not tolerated
    ds = admin.get(DaemonSet, "proxy", namespace=NS)
    for node, pod in by_node.items():
        assert affinity_node(pod) == node  # placed by the scheduler through the node affinity
        assert re.fullmatch(r"proxy-[bcdfghjklmnpqrstvwxz2456789]{5}", pod.metadata.name)
        (ref,) = pod.metadata.ownerReferences
        assert (ref.kind, ref.name, ref.uid, ref.controller, ref.blockOwnerDeletion) == (
            "DaemonSet",
            "proxy",
            ds.metadata.uid,
            True,
            True,
        )
        assert {(t.key, t.effect) for t in pod.spec.tolerations} >= DEFAULT_TOLERATIONS
    (rev,) = admin.list(ControllerRevision, namespace=NS, labels={"k8s-app": "proxy"})
    hash_ = rev.metadata.labels["controller-revision-hash"]
    assert rev.metadata.name == f"proxy-{hash_}" and rev.revision == 1
    assert {p.metadata.labels["controller-revision-hash"] for p in by_node.values()} == {hash_}

    add_ready_node(admin, "ds-w3")
    wait_until(
        lambda: len(daemon_pods(admin)) == 4 and all(p.spec.nodeName for p in daemon_pods(admin)), 30, what="4 pods"
    )
    assert {p.spec.nodeName for p in daemon_pods(admin)} == {"ds-cp", "ds-w1", "ds-w2", "ds-w3"}

    with FakeKubelet(api, NS, accept=lambda p: (p.metadata.labels or {}).get("k8s-app") == "proxy"):
        out = api.kubectl("rollout", "status", "ds/proxy", "-n", NS, "--timeout=60s", timeout=90).stdout
        assert 'daemon set "proxy" successfully rolled out' in out
        st = admin.get(DaemonSet, "proxy", namespace=NS).status
        assert (st.desiredNumberScheduled, st.currentNumberScheduled, st.numberReady, st.numberAvailable) == (
            4,
            4,
            4,
            4,
        )
        assert (st.updatedNumberScheduled, st.numberMisscheduled, st.numberUnavailable or 0) == (4, 0, 0)

        api.kubectl("set", "image", "ds/proxy", "proxy=registry.k8s.io/kube-proxy:v1.33.1", "-n", NS)
        api.kubectl("rollout", "status", "ds/proxy", "-n", NS, "--timeout=60s", timeout=90)
        wait_until(lambda: len(daemon_pods(admin)) == 4, 30, what="old pods gone")
        assert {p.spec.containers[0].image for p in daemon_pods(admin)} == {"registry.k8s.io/kube-proxy:v1.33.1"}
    revs = sorted(admin.list(ControllerRevision, namespace=NS, labels={"k8s-app": "proxy"}), key=lambda r: r.revision)
    assert [r.revision for r in revs] == [1, 2]
    history = api.kubectl("rollout", "history", "ds/proxy", "-n", NS).stdout
    assert re.search(r"^1\s", history, re.M) and re.search(r"^2\s", history, re.M), history

    with FakeKubelet(api, NS, accept=lambda p: (p.metadata.labels or {}).get("k8s-app") == "proxy"):
        api.kubectl("rollout", "undo", "ds/proxy", "-n", NS)
        api.kubectl("rollout", "status", "ds/proxy", "-n", NS, "--timeout=60s", timeout=90)
        wait_until(
            lambda: (
                {p.spec.containers[0].image for p in daemon_pods(admin)} == {"registry.k8s.io/kube-proxy:v1.33.0"}
                and len(daemon_pods(admin)) == 4
            ),
            30,
            what="undo rolled back",
        )
    revs = sorted(admin.list(ControllerRevision, namespace=NS, labels={"k8s-app": "proxy"}), key=lambda r: r.revision)
    assert [r.revision for r in revs] == [2, 3]  # the first revision is current again, renumbered
    assert revs[1].metadata.labels["controller-revision-hash"] == hash_

    # history beyond revisionHistoryLimit goes, except a revision live Pods still carry
    api.kubectl("patch", "ds/proxy", "-n", NS, "--type=merge", "-p", '{"spec":{"revisionHistoryLimit":0}}')
    wait_until(
        lambda: [r.revision for r in admin.list(ControllerRevision, namespace=NS, labels={"k8s-app": "proxy"})] == [3],
        30,
        what="old revision pruned",
    )

    # OnDelete: a new template waits until a Pod is deleted by hand
    ondelete = '{"spec":{"updateStrategy":{"type":"OnDelete","rollingUpdate":null}}}'
    api.kubectl("patch", "ds/proxy", "-n", NS, "--type=merge", "-p", ondelete)
    api.kubectl("set", "image", "ds/proxy", "proxy=registry.k8s.io/kube-proxy:v1.33.2", "-n", NS)
    wait_until(
        lambda: (d := admin.get(DaemonSet, "proxy", namespace=NS)).status.observedGeneration == d.metadata.generation,
        30,
        what="OnDelete change observed",
    )
    assert {p.spec.containers[0].image for p in daemon_pods(admin)} == {"registry.k8s.io/kube-proxy:v1.33.0"}
    victim = next(p for p in daemon_pods(admin) if p.spec.nodeName == "ds-w1")
    api.kubectl("delete", "pod", victim.metadata.name, "-n", NS, "--grace-period=0", "--force")
    wait_until(
        lambda: any(
            p.spec.nodeName == "ds-w1" and p.spec.containers[0].image.endswith("v1.33.2") for p in daemon_pods(admin)
        ),
        30,
        what="replacement with the new template",
    )
    assert sum(p.spec.containers[0].image.endswith("v1.33.2") for p in daemon_pods(admin)) == 1
