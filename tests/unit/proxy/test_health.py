"""kube-proxy's /healthz and /livez bodies and health rules (ProxyHealthServer)."""

from __future__ import annotations

import json
import re

from pykubeadm.proxy.health import ProxyHealth, go_time


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.5

    def __call__(self) -> float:
        return self.now


def test_go_time_format() -> None:
    assert go_time(None) == "0001-01-01 00:00:00 +0000 UTC"
    assert go_time(1_700_000_000.25) == "2023-11-14 22:13:20.25 +0000 UTC"
    assert re.fullmatch(r"2023-11-14 22:13:20 \+0000 UTC m=\+\d+\.\d{9}", go_time(1_700_000_000.0, 5.0e9))


def test_healthy_until_a_queued_update_is_late() -> None:
    clock = Clock()
    h = ProxyHealth(60.0, clock)
    h.updated()
    h.queued_update()
    clock.now += 59
    code, body = h.body(with_node=True)
    assert code == 200 and json.loads(body)["nodeEligible"] is True
    clock.now += 2
    code, body = h.body(with_node=True)
    assert code == 503
    assert json.loads(body)["lastUpdated"] == "2023-11-14 22:13:20.5 +0000 UTC"
    h.updated()
    assert h.body(with_node=False)[0] == 200


def test_node_being_deleted_or_tainted_is_not_eligible_but_live() -> None:
    h = ProxyHealth(60.0, Clock())
    h.sync_node({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}})
    assert h.body(with_node=True)[0] == 503
    code, body = h.body(with_node=False)
    assert code == 200 and set(json.loads(body)) == {"lastUpdated", "currentTime"}
    h.sync_node(
        {"metadata": {}, "spec": {"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]}}
    )
    assert json.loads(h.body(with_node=True)[1])["nodeEligible"] is False
    h.sync_node({"metadata": {}, "spec": {}})
    assert h.body(with_node=True)[0] == 200
