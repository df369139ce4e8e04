"""The HorizontalPodAutoscaler controller (kube's horizontal.go), autoscaling/v2.

Every --horizontal-pod-autoscaler-sync-period (15 s) each HPA is reconciled: the target's scale subresource is read
(AbleToScale False / FailedGetScale when it cannot be), the replica count is clamped to [minReplicas, maxReplicas] or
computed from every metric (the highest proposal wins; Resource and ContainerResource metrics from metrics.k8s.io
PodMetrics against the Pods' requests or an average value; Pods, Object and External metrics answer as kube does
when no custom or external metrics API is served), normalized by behavior.py, and written to the scale subresource
(event SuccessfulRescale "New size: N; reason: …"). Status carries currentReplicas, desiredReplicas,
currentMetrics, lastScaleTime and the AbleToScale, ScalingActive and ScalingLimited conditions with kube's reasons
and messages.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler
from lightkube.resources.core_v1 import Pod

from pykubeadm.apiserver.selectors import parse_label_selector
from pykubeadm.apiserver.status import ApiError
from pykubeadm.client import object_key
from pykubeadm.controllers.controllerutil_api import EventRecorder
from pykubeadm.controllers.podautoscaler.behavior import Normalizer, default_behavior
from pykubeadm.controllers.podautoscaler.replicas import (
    CPU_INITIALIZATION_PERIOD,
    INITIAL_READINESS_DELAY,
    TOLERANCE,
    PodMetric,
    ReplicaError,
    raw_replicas,
    resource_replicas,
)
from pykubeadm.controllers.runtime import Controller, TemporaryError
from pykubeadm.metricsserver.storage import format_cpu
from pykubeadm.util.apitime import now_time, parse_time
from pykubeadm.util.quantity import parse_quantity

__all__ = ["HorizontalController"]

log = logging.getLogger(__name__)

_PLURALS = {
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "ReplicationController": "replicationcontrollers",
}
_DEFAULT_METRICS = [
    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
]


class _ApiFailure(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class _MetricError(Exception):
    """A metric cannot be computed: `condition` (reason, message) for ScalingActive, `err` wrapped for the event."""

    def __init__(self, reason: str, inner: str, outer: str) -> None:
        super().__init__(outer)
        self.reason = reason
        self.inner = inner


@dataclass
class _Computed:
    replicas: int
    metric: str
    statuses: list[dict[str, Any]]
    error: str | None


def _milli_quantity(milli: int) -> str:
    """resource.NewMilliQuantity(v, DecimalSI).String()."""
    return format_cpu(milli * 1_000_000)


class HorizontalController(Controller):
    name = "horizontalpodautoscaling"
    service_account = "horizontal-pod-autoscaler"

    def setup(self) -> None:
        opts = self.ctx.options
        self.sync_period = float(getattr(opts, "horizontal_pod_autoscaler_sync_period", 15.0))
        self.tolerance = float(getattr(opts, "horizontal_pod_autoscaler_tolerance", TOLERANCE))
        self.periods = {
            "cpu_initialization_period": float(
                getattr(opts, "horizontal_pod_autoscaler_cpu_initialization_period", CPU_INITIALIZATION_PERIOD)
            ),
            "initial_readiness_delay": float(
                getattr(opts, "horizontal_pod_autoscaler_initial_readiness_delay", INITIAL_READINESS_DELAY)
            ),
        }
        downscale = float(getattr(opts, "horizontal_pod_autoscaler_downscale_stabilization", 300.0))
        self.normalizer = Normalizer(downscale)
        self.recorder = EventRecorder(self.client, "horizontal-pod-autoscaler")
        self.watch(HorizontalPodAutoscaler, self._on_hpa)
        self.pods = self.watch(Pod, lambda *_: None)

    def _on_hpa(self, event: str, obj: Any, _old: Any) -> None:
        key = object_key(obj)
        if event == "DELETED":
            self.normalizer.forget(key)
            return
        self.queue.add_after(key, self.sync_period)  # kube's fixed-interval queue: one sync per period

    # --- API -----------------------------------------------------------------------------------------------------
    async def _api(self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None) -> Any:
        http = self.client._client._client  # lightkube's httpx client: these kinds have no lightkube models
        resp = await http.request(method, path, json=body, params=params)
        if resp.status_code >= 400:
            try:
                message = str(resp.json().get("message") or "")
            except ValueError:
                message = ""
            if resp.status_code == 503 and not message:
                message = "the server is currently unable to handle the request"
            raise _ApiFailure(resp.status_code, message or resp.text.strip())
        return resp.json()

    # --- reconcile -----------------------------------------------------------------------------------------------
    async def sync(self, key: Any) -> None:
        namespace, name = str(key).split("/", 1)
        try:
            hpa = await self._api("GET", f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/{name}")
        except _ApiFailure as err:
            if err.code == 404:
                self.normalizer.forget(key)
                return
            raise TemporaryError(str(err), delay=self.sync_period) from err
        try:
            await self.reconcile(key, hpa)
        except TemporaryError as err:
            log.warning("%s", err)  # kube's HandleError: the HPA is tried again next period
            raise
        except Exception as err:
            log.warning("failed to reconcile HorizontalPodAutoscaler %s: %s", key, err, exc_info=True)
            raise TemporaryError(str(err), delay=self.sync_period) from err
        self.queue.add_after(key, self.sync_period)

    def _scale_path(self, hpa: Mapping[str, Any]) -> str:
        ref = hpa["spec"]["scaleTargetRef"]
        api_version = ref.get("apiVersion") or "v1"
        plural = _PLURALS.get(ref.get("kind", ""), ref.get("kind", "").lower() + "s")
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        return f"{base}/namespaces/{hpa['metadata']['namespace']}/{plural}/{ref['name']}/scale"

    async def reconcile(self, key: str, hpa: dict[str, Any]) -> None:
        now = time.time()
        original = copy.deepcopy(hpa.get("status") or {})
        spec = hpa["spec"]
        status = hpa.setdefault("status", {})
        ref = spec["scaleTargetRef"]
        reference = f"{ref.get('kind')}/{hpa['metadata']['namespace']}/{ref.get('name')}"
        min_r = int(spec.get("minReplicas") or 1)
        max_r = int(spec["maxReplicas"])
        try:
            scale = await self._api("GET", self._scale_path(hpa))
        except _ApiFailure as err:
            self._set_condition(hpa, "AbleToScale", "False", "FailedGetScale",
                                f"the HPA controller was unable to get the target's current scale: {err}")  # fmt: skip
            self.recorder.event(hpa, "Warning", "FailedGetScale", str(err))
            await self._update_status(hpa, original)
            raise TemporaryError(f"failed to query scale subresource for {reference}: {err}", self.sync_period) from err
        self._set_condition(hpa, "AbleToScale", "True", "SucceededGetScale",
                            "the HPA controller was able to get the target's current scale")  # fmt: skip
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        self.normalizer.record_initial(key, current, now)
        desired, rescale_reason, metric_statuses = 0, "", list(status.get("currentMetrics") or [])
        rescale = True
        if current == 0 and min_r != 0:
            desired, rescale = 0, False
            self._set_condition(hpa, "ScalingActive", "False", "ScalingDisabled",
                                "scaling is disabled since the replica count of the target is zero")  # fmt: skip
        elif current > max_r:
            desired, rescale_reason = max_r, "Current number of replicas above Spec.MaxReplicas"
        elif current < min_r:
            desired, rescale_reason = min_r, "Current number of replicas below Spec.MinReplicas"
        else:
            computed = await self._compute(hpa, scale, now)
            metric_statuses = computed.statuses
            if computed.error is not None and computed.replicas == -1:
                status["currentReplicas"] = current
                status["currentMetrics"] = metric_statuses or None
                await self._update_status(hpa, original)
                self.recorder.event(hpa, "Warning", "FailedComputeMetricsReplicas", computed.error)
                raise TemporaryError(f"failed to compute desired number of replicas based on listed metrics for "
                                     f"{reference}: {computed.error}", self.sync_period)  # fmt: skip
            desired = computed.replicas
            if desired > current:
                rescale_reason = f"{computed.metric} above target"
            elif desired < current:
                rescale_reason = "All metrics below target"
            if spec.get("behavior") is None:
                out, able, limited = self.normalizer.normalize(key, current, desired, min_r, max_r, now)
            else:
                behavior = default_behavior(spec["behavior"], self.normalizer.downscale_window)
                out, able, limited = self.normalizer.normalize_with_behavior(
                    key, behavior, current, desired, min_r, max_r, now
                )
            self._set_condition(hpa, "AbleToScale", "True", *able)
            self._set_condition(hpa, "ScalingLimited", *limited)
            desired = out
            rescale = desired != current
        if rescale:
            new_scale = copy.deepcopy(scale)
            new_scale.setdefault("spec", {})["replicas"] = desired
            try:
                await self._api("PUT", self._scale_path(hpa), new_scale)
            except _ApiFailure as err:
                self.recorder.event(hpa, "Warning", "FailedRescale",
                                    f"New size: {desired}; reason: {rescale_reason}; error: {err}")  # fmt: skip
                self._set_condition(hpa, "AbleToScale", "False", "FailedUpdateScale",
                                    f"the HPA controller was unable to update the target scale: {err}")  # fmt: skip
                status["currentReplicas"], status["currentMetrics"] = current, metric_statuses or None
                await self._update_status(hpa, original)
                raise TemporaryError(f"failed to rescale {reference}: {err}", self.sync_period) from err
            self._set_condition(hpa, "AbleToScale", "True", "SucceededRescale",
                                f"the HPA controller was able to update the target scale to {desired}")  # fmt: skip
            self.recorder.event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {rescale_reason}")
            behavior_spec = spec.get("behavior")
            self.normalizer.store_scale_event(
                key,
                default_behavior(behavior_spec, self.normalizer.downscale_window)
                if behavior_spec is not None
                else None,
                current,
                desired,
                now,
            )
            log.info("Successful rescale of %s, old size: %d, new size: %d, reason: %s",
                     hpa["metadata"]["name"], current, desired, rescale_reason)  # fmt: skip
            status["lastScaleTime"] = now_time()
        else:
            desired = current
        status["currentReplicas"] = current
        status["desiredReplicas"] = desired
        status["currentMetrics"] = metric_statuses or None
        await self._update_status(hpa, original)

    async def _update_status(self, hpa: dict[str, Any], original: Mapping[str, Any]) -> None:
        status = {k: v for k, v in (hpa.get("status") or {}).items() if v is not None}
        # required fields, written as kube does even when the metrics failed (desiredReplicas: the last one)
        status.setdefault("currentReplicas", 0)
        status.setdefault("desiredReplicas", 0)
        hpa["status"] = status
        if status == {k: v for k, v in original.items() if v is not None}:
            return
        meta = hpa["metadata"]
        path = f"/apis/autoscaling/v2/namespaces/{meta['namespace']}/horizontalpodautoscalers/{meta['name']}/status"
        body = {**hpa, "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler"}
        try:
            await self._api("PUT", path, body)
        except _ApiFailure as err:
            self.recorder.event(hpa, "Warning", "FailedUpdateStatus", str(err))
            raise TemporaryError(f"failed to update status for {meta['name']}: {err}", self.sync_period) from err

    def _set_condition(self, hpa: dict[str, Any], type_: str, status: str, reason: str, message: str) -> None:
        conds: list[dict[str, Any]] = hpa.setdefault("status", {}).setdefault("conditions", []) or []
        hpa["status"]["conditions"] = conds
        existing = next((c for c in conds if c.get("type") == type_), None)
        if existing is None:
            existing = {"type": type_}
            conds.append(existing)
        if existing.get("status") != status:
            existing["lastTransitionTime"] = now_time()
        existing.update(status=status, reason=reason, message=message)
        order = {"AbleToScale": 0, "ScalingActive": 1, "ScalingLimited": 2}
        conds.sort(key=lambda c: order.get(c.get("type", ""), 3))

    # --- metrics -------------------------------------------------------------------------------------------------
    async def _compute(self, hpa: dict[str, Any], scale: Mapping[str, Any], now: float) -> _Computed:
        selector_text = (scale.get("status") or {}).get("selector") or ""
        if not selector_text:
            message = "selector is required"
            self.recorder.event(hpa, "Warning", "SelectorRequired", message)
            self._set_condition(hpa, "ScalingActive", "False", "InvalidSelector",
                                "the HPA target's scale is missing a selector")  # fmt: skip
            return _Computed(-1, "", [], message)
        try:
            selector = parse_label_selector(selector_text)
        except ApiError as err:
            message = f"couldn't convert selector into a corresponding internal selector object: {err.message}"
            self.recorder.event(hpa, "Warning", "InvalidSelector", message)
            self._set_condition(hpa, "ScalingActive", "False", "InvalidSelector", message)
            return _Computed(-1, "", [], message)
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        namespace = hpa["metadata"]["namespace"]
        pods = [
            p.to_dict()
            for p in self.pods.items()
            if p.metadata.namespace == namespace and selector.matches(p.metadata.labels or {})
        ]
        specs = (hpa["spec"].get("metrics") or None) or _DEFAULT_METRICS
        statuses: list[dict[str, Any]] = [{"type": ""} for _ in specs]
        replicas, metric, invalid = 0, "", 0
        first: _MetricError | None = None
        for i, spec in enumerate(specs):
            try:
                proposal, name, statuses[i] = await self._metric(hpa, spec, current, selector_text, pods, now)
            except _MetricError as err:
                if first is None:
                    first = err
                invalid += 1
                continue
            if replicas == 0 or proposal > replicas:
                replicas, metric = proposal, name
        error = None
        if first is not None:
            error = f"invalid metrics ({invalid} invalid out of {len(specs)}), first error is: {first}"
        if first is not None and (invalid >= len(specs) or replicas < current):
            self._set_condition(hpa, "ScalingActive", "False", first.reason,
                                f"the HPA was unable to compute the replica count: {first.inner}")  # fmt: skip
            return _Computed(-1, "", statuses, error)
        self._set_condition(hpa, "ScalingActive", "True", "ValidMetricFound",
                            f"the HPA was able to successfully calculate a replica count from {metric}")  # fmt: skip
        return _Computed(replicas, metric, statuses, error)

    def _fail(self, hpa: dict[str, Any], reason: str, inner: str, outer: str) -> _MetricError:
        self.recorder.event(hpa, "Warning", reason, inner)
        return _MetricError(reason, inner, outer)

    async def _metric(
        self,
        hpa: dict[str, Any],
        spec: Mapping[str, Any],
        current: int,
        selector: str,
        pods: list[dict[str, Any]],
        now: float,
    ) -> tuple[int, str, dict[str, Any]]:
        kind = spec.get("type", "")
        namespace = hpa["metadata"]["namespace"]
        if kind in ("Resource", "ContainerResource"):
            source = spec.get("resource") if kind == "Resource" else spec.get("containerResource")
            source = source or {}
            resource, container = source.get("name", ""), source.get("container", "") if kind != "Resource" else ""
            reason = "FailedGetResourceMetric" if kind == "Resource" else "FailedGetContainerResourceMetric"
            try:
                proposal, name, current_value = await self._resource(
                    source.get("target") or {}, resource, container, namespace, selector, pods, current, now, kind
                )
            except ReplicaError as err:
                outer = (f"failed to get {resource} resource metric value: {err}" if kind == "Resource"
                         else f"failed to get {container} container metric value: {err}")  # fmt: skip
                raise self._fail(hpa, reason, str(err), outer) from err
            key = "resource" if kind == "Resource" else "containerResource"
            body: dict[str, Any] = {"name": resource, "current": current_value}
            if kind != "Resource":
                body["container"] = container
            return proposal, name, {"type": kind, key: body}
        if kind == "Pods":
            metric = (spec.get("pods") or {}).get("metric") or {}
            inner = (f"unable to get metric {metric.get('name', '')}: unable to fetch metrics from custom metrics API: "
                     "no custom metrics API (custom.metrics.k8s.io) registered")  # fmt: skip
            raise self._fail(hpa, "FailedGetPodsMetric", inner, f"failed to get pods metric value: {inner}")
        if kind == "Object":
            obj = spec.get("object") or {}
            metric, target = obj.get("metric") or {}, obj.get("describedObject") or {}
            inner = (f"unable to get metric {metric.get('name', '')}: {target.get('kind', '')} on {namespace} "
                     f"{target.get('name', '')}/unable to fetch metrics from custom metrics API: no custom metrics API "
                     "(custom.metrics.k8s.io) registered")  # fmt: skip
            raise self._fail(hpa, "FailedGetObjectMetric", inner, f"failed to get object metric value: {inner}")
        if kind == "External":
            metric = (spec.get("external") or {}).get("metric") or {}
            mname = metric.get("name", "")
            sel = "nil" if not metric.get("selector") else _go_selector(metric["selector"])
            inner = (f"unable to get external metric {namespace}/{mname}/{sel}: unable to fetch metrics from external "
                     f"metrics API: the server could not find the requested resource (get {mname}.external.metrics.k8s.io)")  # fmt: skip
            outer = f"failed to get {mname} external metric value: failed to get {mname} external metric: {inner}"
            raise self._fail(hpa, "FailedGetExternalMetric", inner, outer)
        inner = f'unknown metric source type "{kind}"'
        self.recorder.event(hpa, "Warning", "InvalidMetricSourceType", inner)
        raise _MetricError("InvalidMetricSourceType", inner, inner)

    async def _resource(
        self,
        target: Mapping[str, Any],
        resource: str,
        container: str,
        namespace: str,
        selector: str,
        pods: list[dict[str, Any]],
        current: int,
        now: float,
        kind: str,
    ) -> tuple[int, str, dict[str, Any]]:
        average_value = target.get("averageValue")
        utilization = target.get("averageUtilization")
        if average_value is None and utilization is None:
            raise ReplicaError("invalid resource metric source: neither an average utilization target nor an average "
                               "value (usage) target was set")  # fmt: skip
        try:
            metrics = await self._pod_metrics(resource, container, namespace, selector)
        except ReplicaError as err:
            raise ReplicaError(f"unable to get metrics for resource {resource}: {err}") from err
        what = "usage" if average_value is not None else "utilization"
        try:
            if average_value is not None:
                milli = _milli(average_value)
                p = raw_replicas(current, milli, resource, pods, metrics, now, tolerance=self.tolerance, **self.periods)
                return p.replicas, f"{resource} resource", {"averageValue": _milli_quantity(p.raw)}
            p = resource_replicas(current, int(utilization or 0), resource, pods, metrics, now, container=container,
                                  tolerance=self.tolerance, **self.periods)  # fmt: skip
        except ReplicaError as err:
            raise ReplicaError(f"failed to get {resource} {what}: {err}") from err
        name = f"{resource} resource utilization (percentage of request)"
        if kind == "ContainerResource":
            name = f"{resource} container resource utilization (percentage of request)"
        return p.replicas, name, {"averageUtilization": p.utilization, "averageValue": _milli_quantity(p.raw)}

    async def _pod_metrics(self, resource: str, container: str, namespace: str, selector: str) -> dict[str, PodMetric]:
        """kube's resource metrics client: PodMetrics of the selected Pods → per-Pod usage (milli-units)."""
        path = f"/apis/metrics.k8s.io/v1beta1/namespaces/{quote(namespace)}/pods"
        try:
            body = await self._api("GET", path, params={"labelSelector": selector})
        except _ApiFailure as err:
            message = str(err)
            if err.code == 503:
                message = "the server is currently unable to handle the request (get pods.metrics.k8s.io)"
            raise ReplicaError(f"unable to fetch metrics from resource metrics API: {message}") from err
        items = body.get("items") or []
        if not items:
            raise ReplicaError("no metrics returned from resource metrics API")
        out: dict[str, PodMetric] = {}
        for m in items:
            ts = parse_time(m.get("timestamp"))
            window = _seconds(m.get("window") or "0s")
            containers = m.get("containers") or []
            total, missing = 0, False
            if container:
                found = next((c for c in containers if c.get("name") == container), None)
                if found is None:
                    continue
                usage = (found.get("usage") or {}).get(resource)
                if usage is None:
                    raise ReplicaError(
                        f"failed to get container metrics: missing resource metric {resource} for container "
                        f"{container} in pod {namespace}/{m['metadata']['name']}"
                    )
                total = _milli(usage)
            else:
                for c in containers:
                    usage = (c.get("usage") or {}).get(resource)
                    if usage is None:
                        missing = True
                        break
                    total += _milli(usage)
            if not missing:
                out[m["metadata"]["name"]] = PodMetric(total, ts.timestamp() if ts else 0.0, window)
        return out


def _milli(quantity: Any) -> int:
    """Quantity.MilliValue(): rounded up."""
    return math.ceil(parse_quantity(str(quantity)) * 1000)


def _seconds(text: str) -> float:
    from pykubeadm.util.goduration import parse_duration

    try:
        return parse_duration(text).total_seconds()
    except ValueError:
        return 0.0


def _go_selector(selector: Mapping[str, Any]) -> str:
    labels = "".join(f"{k}: {v}," for k, v in sorted((selector.get("matchLabels") or {}).items()))
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{}},}}"
    )
