"""The lab's drain (lab.drain, what `lab upgrade` runs) against our apiserver and disruption controller: kubectl
drain's output, evictions through pods/eviction retried while the PodDisruptionBudget refuses, DaemonSet-managed and
mirror Pods left on the node, uncordon. The test plays the kubelet (test_endpoints_disruption.FakeKubelet)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from harness import ControllerManager, wait_until
from lightkube import Client
from lightkube.resources.core_v1 import Node, Pod
from lightkube.resources.policy_v1 import PodDisruptionBudget
from test_endpoints_disruption import FakeKubelet, make_namespace, make_pod, pdb_status

from pykubeadm.client import sync_client
from pykubeadm.lab.drain import DrainOptions, drain, uncordon
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def admin(api: ApiServer, start_kcm: Callable[..., ControllerManager]) -> Client:
    start_kcm(extra_flags=["--controllers=disruption,serviceaccount"])
    return sync_client(api.kubeconfig())


def test_drain_evicts_within_the_budget_and_leaves_daemonset_and_mirror_pods(admin: Client) -> None:
    ns = "lab-drain"
    for name in ("lab-a", "lab-b"):
        admin.create(Node.from_dict({"metadata": {"name": name}}))
    make_namespace(admin, ns)
    for i in (1, 2):
        make_pod(admin, ns, f"web-{i}", f"127.0.24.{i}", ready=True, node="lab-a")
    make_pod(admin, ns, "web-0", "127.0.24.9", ready=True, node="lab-b")
    for name, meta in (
        ("proxy-x", {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "proxy", "uid": "ds",
                                          "controller": True}]}),
        ("static-lab-a", {"annotations": {"kubernetes.io/config.mirror": "hash"}, "ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": "lab-a", "uid": "n", "controller": True}]}),
    ):  # fmt: skip
        admin.create(
            Pod.from_dict(
                {
                    "metadata": {"name": name, "namespace": ns, **meta},
                    "spec": {"nodeName": "lab-a", "containers": [{"name": "c", "image": "busybox"}]},
                }
            )
        )
    admin.create(
        PodDisruptionBudget.from_dict(
            {
                "metadata": {"name": "web-pdb", "namespace": ns},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
            }
        )
    )
    wait_until(lambda: (s := pdb_status(admin, ns)) and s.disruptionsAllowed == 1, 20, what="budget allows 1")
    lines: list[str] = []
    with FakeKubelet(admin, ns, "lab-a", "lab-b") as kubelet:
        drain(admin, "lab-a", lines.append, DrainOptions(timeout=90))
    assert lines[0] == "node/lab-a cordoned"
    assert lines[1] == f"Warning: ignoring DaemonSet-managed Pods: {ns}/proxy-x"
    assert lines[-1] == "node/lab-a drained"
    assert sorted(line for line in lines if line.endswith(" evicted")) == ["pod/web-1 evicted", "pod/web-2 evicted"]
    # one budget of 1 for two Pods: the second eviction was refused until the first one's replacement was Ready
    refused = [line for line in lines if line.startswith("error when evicting pods/")]
    assert refused and refused[0].endswith(
        "(will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget."
    )
    assert sorted(kubelet.replaced) == ["web-1", "web-2"]
    left = sorted(p.metadata.name for p in admin.list(Pod, namespace=ns) if p.spec.nodeName == "lab-a")
    assert left == ["proxy-x", "static-lab-a"]
    assert admin.get(Node, "lab-a").spec.unschedulable is True
    lines.clear()
    uncordon(admin, "lab-a", lines.append)
    uncordon(admin, "lab-a", lines.append)
    assert lines == ["node/lab-a uncordoned", "node/lab-a already uncordoned"]
    assert not admin.get(Node, "lab-a").spec.unschedulable
