"""nodeipam's CIDR allocation and nodelifecycle's condition and taint rules."""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime

import pytest

from pykubeadm.controllers.nodeipam.controller import CIDRSet, parse_cluster_cidrs
from pykubeadm.controllers.nodelifecycle.controller import desired_taints, mark_unknown
from pykubeadm.controllers.runtime import PermanentError

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_cidr_allocation_in_order_skipping_used() -> None:
    s = CIDRSet(ipaddress.ip_network("10.244.0.0/16"), 24)
    assert s.size == 256
    assert s.occupy(ipaddress.ip_network("10.244.1.0/24"))
    assert not s.occupy(ipaddress.ip_network("10.245.0.0/24"))
    assert str(s.allocate_next()) == "10.244.0.0/24"
    assert str(s.allocate_next()) == "10.244.2.0/24"
    s.release(ipaddress.ip_network("10.244.0.0/24"))
    assert str(s.allocate_next()) == "10.244.0.0/24"


def test_cidr_exhaustion() -> None:
    s = CIDRSet(ipaddress.ip_network("10.0.0.0/30"), 31)
    s.allocate_next()
    s.allocate_next()
    with pytest.raises(PermanentError, match="no remaining CIDRs"):
        s.allocate_next()


def test_default_masks_and_dual_stack() -> None:
    v4, v6 = parse_cluster_cidrs("10.244.0.0/16,fd00:10:244::/56", None, None)
    assert v4.mask_size == 24 and v6.mask_size == 64
    assert str(v6.allocate_next()) == "fd00:10:244::/64"
    (only,) = parse_cluster_cidrs("192.168.0.0/16", 20, None)
    assert str(only.allocate_next()) == "192.168.0.0/20"


def test_mark_unknown_sets_every_condition() -> None:
    node = {
        "metadata": {"name": "n1"},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastHeartbeatTime": "2025-12-31T23:00:00Z",
                },
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
            ]
        },
    }
    new = mark_unknown(node, NOW, never_updated=False)
    assert new is not None
    by_type = {c["type"]: c for c in new["status"]["conditions"]}
    assert set(by_type) == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
    ready = by_type["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown",
        "NodeStatusUnknown",
        "Kubelet stopped posting node status.",
    )
    assert ready["lastHeartbeatTime"] == "2025-12-31T23:00:00Z"
    assert ready["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert node["status"]["conditions"][0]["status"] == "True"  # input untouched
    assert mark_unknown(new, NOW, never_updated=False) is None


def test_taints_follow_ready() -> None:
    base = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    unknown = desired_taints(base, "Unknown", NOW)
    assert unknown is not None
    assert {(t["key"], t["effect"]) for t in unknown} == {
        ("node-role.kubernetes.io/control-plane", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    }
    assert desired_taints(unknown, "Unknown", NOW) is None
    not_ready = desired_taints(unknown, "False", NOW)
    assert not_ready is not None
    assert {t["key"] for t in not_ready} == {"node-role.kubernetes.io/control-plane", "node.kubernetes.io/not-ready"}
    assert desired_taints(unknown, "True", NOW) == base
    assert desired_taints(base, "True", NOW) is None


def test_a_cordoned_node_gets_the_unschedulable_taint_and_loses_it_on_uncordon() -> None:
    cordoned = desired_taints([], "True", NOW, unschedulable=True)
    assert cordoned == [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    assert desired_taints(cordoned, "True", NOW, unschedulable=True) is None
    assert desired_taints(cordoned, "True", NOW, unschedulable=False) == []


def test_service_range_inside_cluster_cidr_is_never_allocated() -> None:
    s = CIDRSet(ipaddress.ip_network("10.0.0.0/16"), 24)
    s.occupy_overlapping(ipaddress.ip_network("10.0.0.0/23"))
    s.occupy_overlapping(ipaddress.ip_network("192.168.0.0/16"))  # elsewhere: no effect
    s.occupy_overlapping(ipaddress.ip_network("fd00::/64"))  # other family: no effect
    assert str(s.allocate_next()) == "10.0.2.0/24"


def test_nodeipam_gives_a_node_one_set_of_blocks_while_the_informer_lags() -> None:
    """The Node's events before the informer shows the patch (its kubelet posting status) must not allocate again:
    a second patch would merge a second block into spec.podCIDRs (its patch strategy is merge)."""
    import asyncio
    from types import SimpleNamespace

    from pykubeadm.controllers.nodeipam.controller import NodeIPAMController

    stale = SimpleNamespace(metadata=SimpleNamespace(name="n1"), spec=SimpleNamespace(podCIDRs=None, podCIDR=None))
    patches: list[dict[str, object]] = []

    class Client:
        async def patch(self, res: object, name: str, patch: dict[str, object]) -> None:
            patches.append(patch)

    ctl = NodeIPAMController.__new__(NodeIPAMController)
    ctl.enabled = True
    ctl.cidr_sets = parse_cluster_cidrs("10.244.0.0/16", None, None)
    ctl.assigned = {}
    ctl.nodes = {"n1": stale}  # type: ignore[assignment]
    ctl.client = Client()  # type: ignore[assignment]
    added: list[str] = []
    ctl.queue = SimpleNamespace(add=added.append)  # type: ignore[assignment]
    asyncio.run(ctl.sync("n1"))
    ctl._on_node("MODIFIED", stale, stale)  # a status update the informer delivers before the patch
    asyncio.run(ctl.sync("n1"))
    assert patches == [{"spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"]}}]
    assert added == []
    seen = SimpleNamespace(metadata=stale.metadata, spec=SimpleNamespace(podCIDRs=["10.244.0.0/24"], podCIDR=None))
    ctl._on_node("MODIFIED", seen, stale)
    assert ctl.assigned == {}
    ctl._on_node("DELETED", seen, None)
    assert str(ctl.cidr_sets[0].allocate_next()) == "10.244.0.0/24"  # released with the Node
