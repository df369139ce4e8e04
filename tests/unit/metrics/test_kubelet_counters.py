"""The kubelet's started-Pod/container counters and start duration, driven by PodWorker change notifications (plain
objects with a worker's attributes here; the integration test runs the real kubelet)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from pykubeadm.kubelet.metrics import KubeletMetrics


@dataclass
class Ct:
    name: str
    init: bool = False
    container_id: str = ""
    state: dict[str, Any] = field(default_factory=lambda: {"waiting": {}})
    pid: int | None = None


@dataclass
class Worker:
    uid: str
    containers: list[Ct]
    sandbox_ready: bool = False
    source: str = "api"
    phase_: str = "Pending"

    def all_containers(self) -> list[Ct]:
        return self.containers

    def phase(self) -> str:
        return self.phase_

    def finished(self) -> bool:
        return self.phase_ in ("Succeeded", "Failed")


def _values(m: KubeletMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(m.render().decode())
        for s in f.samples
    }


def test_starts_are_counted_once_and_restarts_again() -> None:
    init, app = Ct("init", init=True), Ct("app")
    w = Worker("u1", [init, app])
    m = KubeletMetrics("n1", lambda: [w])
    m.pod_changed(w)
    w.sandbox_ready = True
    init.container_id, init.state, init.pid = "i1", {"running": {}}, 10
    m.pod_changed(w)
    m.pod_changed(w)  # no change: nothing new
    init.state, init.pid = {"terminated": {"exitCode": 0}}, None
    app.container_id, app.state, app.pid, w.phase_ = "a1", {"running": {}}, 11, "Running"
    m.pod_changed(w)
    app.container_id = "a2"  # restarted
    m.pod_changed(w)
    v = _values(m)
    assert v[("kubelet_started_pods_total", ())] == 1
    assert v[("kubelet_started_containers_total", (("container_type", "init_container"),))] == 1
    assert v[("kubelet_started_containers_total", (("container_type", "container"),))] == 2
    assert v[("kubelet_pod_start_duration_seconds_count", ())] == 1
    assert v[("kubelet_running_pods", ())] == 1
    assert v[("kubelet_running_containers", (("container_state", "running"),))] == 1
    assert v[("kubelet_running_containers", (("container_state", "exited"),))] == 1
    assert v[("kubelet_node_name", (("node", "n1"),))] == 1
    w.phase_, app.state, app.pid = "Succeeded", {"terminated": {"exitCode": 0}}, None
    m.pod_changed(w)  # finished: a late change counts nothing again
    assert _values(m)[("kubelet_started_pods_total", ())] == 1
    assert _values(m)[("kubelet_running_pods", ())] == 0


def test_gone_workers_are_forgotten() -> None:
    live: list[Worker] = []
    m = KubeletMetrics("n1", lambda: live)
    for i in range(500):  # Pods come and go without a scrape: what is remembered stays bounded
        w = Worker(f"u{i}", [Ct("app")], sandbox_ready=True)
        live[:] = [w]
        m.pod_changed(w)
    assert len(m._seen) <= 130
    assert _values(m)[("kubelet_started_pods_total", ())] == 500
