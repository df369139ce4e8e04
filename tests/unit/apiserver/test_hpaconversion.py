"""autoscaling/v1 ↔ v2 HorizontalPodAutoscaler conversion (kube's pkg/apis/autoscaling/v1/conversion.go): what v1
cannot say round-trips through its annotations; the v1 default target; a malformed annotation is a 400 naming it."""

import json

import pytest

from pykubeadm.apiserver import status as st
from pykubeadm.apiserver.registry.hpaconversion import (
    BEHAVIOR_ANNOTATION,
    CONDITIONS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    METRICS_ANNOTATION,
    to_v1,
    to_v2,
)

REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def _v2() -> dict:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7"},
        "spec": {
            "scaleTargetRef": REF,
            "minReplicas": 1,
            "maxReplicas": 5,
            "metrics": [
                {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                {
                    "type": "External",
                    "external": {
                        "metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                        "target": {"type": "Value", "value": "30"},
                    },
                },
                {
                    "type": "ContainerResource",
                    "containerResource": {"name": "memory", "container": "app",
                                          "target": {"type": "AverageValue", "averageValue": "64Mi"}},
                },
            ],
            "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                                     "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}},
        },
        "status": {
            "currentReplicas": 2,
            "desiredReplicas": 3,
            "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 75, "averageValue": "75m"}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "12"}}},
                {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                                                  "current": {"value": "31"}}},
                {"type": "Object", "object": {"describedObject": REF, "metric": {"name": "hits"},
                                              "current": {"value": "5", "averageValue": "1"}}},
            ],
            "conditions": [{"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound", "message": "m"}],
        },
    }  # fmt: skip


def test_v2_to_v1_keeps_the_rest_in_annotations():
    v1 = to_v1(_v2())
    assert v1["apiVersion"] == "autoscaling/v1" and v1["metadata"]["resourceVersion"] == "7"
    assert v1["spec"] == {
        "scaleTargetRef": REF,
        "minReplicas": 1,
        "maxReplicas": 5,
        "targetCPUUtilizationPercentage": 50,
    }
    assert v1["status"] == {"currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 75}
    notes = v1["metadata"]["annotations"]
    assert json.loads(notes[METRICS_ANNOTATION]) == [
        {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}},
        {"type": "External", "external": {"metricName": "queue", "metricSelector": {"matchLabels": {"q": "a"}},
                                          "targetValue": "30"}},
        {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
                                                            "targetAverageValue": "64Mi"}},
    ]  # fmt: skip
    assert notes[METRICS_ANNOTATION].startswith('[{"type":"Pods","pods":{"metricName":"qps"')  # Go's compact JSON
    assert json.loads(notes[BEHAVIOR_ANNOTATION]) == {
        "ScaleUp": {"StabilizationWindowSeconds": 0, "SelectPolicy": "Max",
                    "Policies": [{"Type": "Percent", "Value": 100, "PeriodSeconds": 15}]},
        "ScaleDown": None,
    }  # fmt: skip
    current = json.loads(notes[CURRENT_METRICS_ANNOTATION])
    assert current[0]["resource"] == {"name": "cpu", "currentAverageUtilization": 75, "currentAverageValue": "75m"}
    assert current[1:] == [
        {"type": "Pods", "pods": {"metricName": "qps", "currentAverageValue": "12"}},
        {"type": "External", "external": {"metricName": "queue", "metricSelector": {"matchLabels": {"q": "a"}},
                                          "currentValue": "31"}},
        {"type": "Object", "object": {"target": REF, "metricName": "hits", "currentValue": "5", "averageValue": "1"}},
    ]  # fmt: skip
    assert json.loads(notes[CONDITIONS_ANNOTATION])[0]["reason"] == "ValidMetricFound"


def test_round_trip_v2_v1_v2_is_lossless():
    original = _v2()
    back = to_v2(to_v1(original))
    # v1 puts the CPU target after the other metrics (kube's order); everything else is as it was
    want = _v2()
    metrics = want["spec"]["metrics"]
    want["spec"]["metrics"] = [m for m in metrics if m["type"] != "Resource"] + [metrics[1]]
    assert back == want


def test_v1_without_a_target_gets_80_percent_cpu_and_no_annotations():
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
          "metadata": {"name": "w", "annotations": {"a": "b"}},
          "spec": {"scaleTargetRef": REF, "maxReplicas": 3}}  # fmt: skip
    v2 = to_v2(v1)
    assert v2["spec"]["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
    ]
    assert v2["status"] == {"desiredReplicas": 0} and v2["metadata"]["annotations"] == {"a": "b"}
    again = to_v1(v2)
    assert again["spec"]["targetCPUUtilizationPercentage"] == 80 and again["metadata"]["annotations"] == {"a": "b"}
    assert again["status"] == {"currentReplicas": 0, "desiredReplicas": 0}


def test_v1_current_cpu_without_annotation_and_bad_annotation():
    v1 = {"metadata": {"name": "w"}, "spec": {"scaleTargetRef": REF, "maxReplicas": 3, "targetCPUUtilizationPercentage": 40},
          "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentCPUUtilizationPercentage": 33}}  # fmt: skip
    assert to_v2(v1)["status"]["currentMetrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 33}}}
    ]
    v1["metadata"]["annotations"] = {BEHAVIOR_ANNOTATION: "{"}
    with pytest.raises(st.ApiError) as err:
        to_v2(v1)
    assert err.value.code == 400 and BEHAVIOR_ANNOTATION in err.value.message
