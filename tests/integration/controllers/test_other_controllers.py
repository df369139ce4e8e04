"""root-ca-cert-publisher, serviceaccount, nodeipam and nodelifecycle against our apiserver."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from harness import ControllerManager, wait_until
from lightkube import ApiError, Client
from lightkube.models.core_v1 import NodeSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Namespace, Node, NodeStatus, ServiceAccount

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def admin(api: ApiServer, start_kcm: Callable[..., ControllerManager]) -> Client:
    start_kcm(
        extra_flags=[
            "--node-monitor-period=500ms",
            "--node-monitor-grace-period=3s",
            "--node-startup-grace-period=3s",
            "--node-cidr-mask-size=24",
        ]
    )
    return sync_client(api.kubeconfig())


def get_or_none(client: Client, res: type, name: str, namespace: str | None = None) -> object:
    try:
        return client.get(res, name, namespace=namespace)
    except ApiError as err:
        if err.status.code == 404:
            return None
        raise


def test_new_namespace_gets_root_ca_and_default_service_account(api: ApiServer, admin: Client) -> None:
    admin.create(Namespace(metadata=ObjectMeta(name="team-a")))
    cm = wait_until(lambda: get_or_none(admin, ConfigMap, "kube-root-ca.crt", "team-a"), 3, what="kube-root-ca.crt")
    assert cm.data == {"ca.crt": api.pki.ca_cert.read_text()}
    assert wait_until(lambda: get_or_none(admin, ServiceAccount, "default", "team-a"), 3, what="default SA")
    # edits are reverted, deletions repaired
    cm.data = {"ca.crt": "tampered"}
    admin.replace(cm)
    wait_until(
        lambda: admin.get(ConfigMap, "kube-root-ca.crt", namespace="team-a").data["ca.crt"] != "tampered",
        3,
        what="kube-root-ca.crt repaired",
    )
    admin.delete(ServiceAccount, "default", namespace="team-a")
    assert wait_until(lambda: get_or_none(admin, ServiceAccount, "default", "team-a"), 3, what="default SA again")


def ready_node(name: str) -> Node:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Node.from_dict(
        {
            "metadata": {"name": name},
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                ]
            },
        }
    )


def test_nodes_get_distinct_pod_cidrs(admin: Client) -> None:
    for name in ("ipam-1", "ipam-2"):
        admin.create(Node.from_dict({"metadata": {"name": name}}))

    def cidrs() -> list[str] | None:
        got = [(admin.get(Node, n).spec or NodeSpec()).podCIDR for n in ("ipam-1", "ipam-2")]
        return got if all(got) else None

    got = wait_until(cidrs, 3, what="podCIDRs")
    assert len(set(got)) == 2
    assert all(c.startswith("10.244.") and c.endswith("/24") for c in got)
    assert admin.get(Node, "ipam-1").spec.podCIDRs == [got[0]]


def test_silent_node_becomes_unknown_and_unreachable(admin: Client) -> None:
    admin.create(Node.from_dict({"metadata": {"name": "silent-1"}}))
    # post Ready=True once, like a kubelet that then goes silent (retry: nodeipam may patch the Node meanwhile)
    for _ in range(10):
        body = admin.get(Node, "silent-1").to_dict()
        body["status"] = ready_node("silent-1").to_dict()["status"]
        try:
            admin.replace(NodeStatus.from_dict(body), "silent-1")
            break
        except ApiError as err:
            if err.status.code != 409:
                raise

    def unknown() -> object:
        n = admin.get(Node, "silent-1")
        ready = [c for c in n.status.conditions or [] if c.type == "Ready"]
        taints = {(t.key, t.effect) for t in ((n.spec or NodeSpec()).taints or [])}
        ok = ready and ready[0].status == "Unknown" and ("node.kubernetes.io/unreachable", "NoExecute") in taints
        return n if ok else None

    n = wait_until(unknown, 10, what="Ready=Unknown and unreachable taints")
    ready = next(c for c in n.status.conditions if c.type == "Ready")
    assert (ready.reason, ready.message) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")
    assert {(t.key, t.effect) for t in n.spec.taints} >= {
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    }
