"""The HPA controller's reconcile against a scripted API (the e2e in tests/e2e/test_metrics.py runs the real one):
what it reads, what it writes to the scale subresource and to the status, with kube's conditions and events."""

from __future__ import annotations

import asyncio
from typing import Any

from lightkube import codecs

from pykubeadm.controllers.podautoscaler import HorizontalController
from pykubeadm.controllers.runtime import ControllerContext

SCALE = "/apis/apps/v1/namespaces/default/deployments/web/scale"
STATUS = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web/status"
OLD = "2026-01-01T00:00:00Z"


def _pod(name: str) -> Any:
    return codecs.from_dict({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "resources": {"requests": {"cpu": "100m"}}}]},
        "status": {"phase": "Running", "startTime": OLD,
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": OLD}]},
    })  # fmt: skip


class _Pods:
    def __init__(self, pods: list[Any]) -> None:
        self._pods = pods

    def items(self) -> list[Any]:
        return self._pods


def _hpa(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                         "target": {"type": "Utilization", "averageUtilization": 50}}}],
            **spec,
        },
    }  # fmt: skip


def _run(hpa: dict[str, Any], cpu: str) -> tuple[list[tuple[str, str, Any]], list[tuple[str, str, str]]]:
    calls: list[tuple[str, str, Any]] = []
    events: list[tuple[str, str, str]] = []

    async def main() -> None:
        ctl = HorizontalController(ControllerContext(client=object()))  # type: ignore[arg-type]
        ctl.pods = _Pods([_pod("web-1")])  # type: ignore[assignment]
        ctl.recorder.event = lambda obj, type_, reason, message, **_: events.append((type_, reason, message))  # type: ignore[method-assign]

        async def api(method: str, path: str, body: Any = None, params: Any = None) -> Any:
            calls.append((method, path, body))
            if path == SCALE and method == "GET":
                return {"kind": "Scale", "apiVersion": "autoscaling/v1", "spec": {"replicas": 1},
                        "status": {"replicas": 1, "selector": "app=web"}}  # fmt: skip
            if path.startswith("/apis/metrics.k8s.io/"):
                assert params == {"labelSelector": "app=web"}
                return {"items": [{"metadata": {"name": "web-1"}, "timestamp": "2026-02-01T00:00:00Z",
                                   "window": "15s", "containers": [{"name": "web", "usage": {"cpu": cpu}}]}]}  # fmt: skip
            return body

        ctl._api = api  # type: ignore[method-assign]
        await ctl.reconcile("default/web", hpa)

    asyncio.run(main())
    return calls, events


def test_a_busy_pod_is_scaled_up_with_kubes_status_and_event() -> None:
    hpa = _hpa()
    calls, events = _run(hpa, "150m")  # 150 % of the request, target 50 % → 3 replicas
    puts = {path: body for method, path, body in calls if method == "PUT"}
    assert puts[SCALE]["spec"]["replicas"] == 3
    status = puts[STATUS]["status"]
    assert (status["currentReplicas"], status["desiredReplicas"]) == (1, 3)
    assert status["lastScaleTime"]
    assert status["currentMetrics"] == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "current": {"averageUtilization": 150, "averageValue": "150m"}},
        }
    ]
    conds = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conds == {"AbleToScale": ("True", "SucceededRescale"), "ScalingActive": ("True", "ValidMetricFound"),
                     "ScalingLimited": ("False", "DesiredWithinRange")}  # fmt: skip
    assert events == [
        (
            "Normal",
            "SuccessfulRescale",
            "New size: 3; reason: cpu resource utilization (percentage of request) above target",
        )
    ]


def test_pods_metrics_answer_as_without_a_custom_metrics_api() -> None:
    hpa = _hpa(metrics=[{"type": "Pods", "pods": {"metric": {"name": "packets"},
                                                  "target": {"type": "AverageValue", "averageValue": "1k"}}}])  # fmt: skip
    try:
        _run(hpa, "10m")
    except Exception as err:  # TemporaryError: kube returns the error and retries next period
        assert "invalid metrics (1 invalid out of 1)" in str(err)
    cond = next(c for c in hpa["status"]["conditions"] if c["type"] == "ScalingActive")
    assert (cond["status"], cond["reason"]) == ("False", "FailedGetPodsMetric")
    assert cond["message"] == (
        "the HPA was unable to compute the replica count: unable to get metric packets: unable to fetch metrics from "
        "custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"
    )
    assert hpa["status"]["desiredReplicas"] == 0 and hpa["status"]["currentReplicas"] == 1
