"""The controller-manager's and scheduler's registries: client-go's workqueue series as the WorkQueue is used, the
leader-election gauge, the scheduler's pending Pods, and one registry per component (two never collide)."""

from __future__ import annotations

import asyncio

from prometheus_client.parser import text_string_to_metric_families

from pykubeadm.controllers.metrics import ComponentMetrics
from pykubeadm.controllers.runtime import WorkQueue
from pykubeadm.scheduler.metrics import SchedulerMetrics


def _samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def test_workqueue_series_follow_adds_gets_and_retries() -> None:
    metrics = ComponentMetrics()

    async def use_queue() -> None:
        queue = WorkQueue(metrics=metrics.queue("deployment"))
        queue.add("a")
        queue.add("a")  # de-duplicated: not an add
        queue.add("b")
        key = await queue.get()
        snapshot = _samples(metrics.render())
        assert snapshot[("workqueue_longest_running_processor_seconds", (("name", "deployment"),))] >= 0
        queue.done(key)
        queue.add_after("c", 0)  # a retry that is due at once
        queue.shutdown()

    asyncio.run(use_queue())
    s = _samples(metrics.render())
    name = (("name", "deployment"),)
    assert s[("workqueue_adds_total", name)] == 3
    assert s[("workqueue_depth", name)] == 2  # b and c wait
    assert s[("workqueue_retries_total", name)] == 1
    assert s[("workqueue_queue_duration_seconds_count", name)] == 1
    assert s[("workqueue_work_duration_seconds_count", name)] == 1
    assert s[("workqueue_unfinished_work_seconds", name)] == 0


def test_leader_election_status_is_read_at_scrape_time() -> None:
    class Elector:
        leading = False

        def is_leader(self) -> bool:
            return self.leading

    elector = Elector()
    metrics = ComponentMetrics()
    metrics.watch_leader_election("kube-controller-manager", elector)
    key = ("leader_election_master_status", (("name", "kube-controller-manager"),))
    assert _samples(metrics.render())[key] == 0
    elector.leading = True
    assert _samples(metrics.render())[key] == 1


def test_components_have_their_own_registries() -> None:
    first, second = SchedulerMetrics(), SchedulerMetrics()  # the same names twice: no "Duplicated timeseries"
    first.attempt("unschedulable", 0.01)
    first.scheduled(0.02, attempts=2)
    second.watch_pending(lambda: {"active": 3, "unschedulable": 1})
    a, b = _samples(first.render()), _samples(second.render())
    attempts = ("scheduler_schedule_attempts_total", (("profile", "default-scheduler"), ("result", "unschedulable")))
    assert a[attempts] == 1 and b[attempts] == 0
    assert a[("scheduler_pod_scheduling_attempts_count", ())] == 1
    assert b[("scheduler_pending_pods", (("queue", "active"),))] == 3
    assert b[("scheduler_pending_pods", (("queue", "gated"),))] == 0
    assert "process_cpu_seconds_total" in {name for name, _ in a}
