"""autoscaling/v1 beside autoscaling/v2 against a real apiserver: discovery (v2 preferred), the issue's
`kubectl autoscale` (a v1 create) read back with `kubectl get hpa` (v2), and the official Python client's
AutoscalingV1Api and AutoscalingV2Api on the same objects: what v1 cannot say travels in kube's annotations, a v1
write keeps it, the status subresource at both versions, a watch at v1."""

import json

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("kubectl_available")]

METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"


def test_discovery_lists_v1_and_prefers_v2(api):
    versions = api.kubectl("api-versions").stdout.split()
    assert "autoscaling/v1" in versions and "autoscaling/v2" in versions
    group = json.loads(api.kubectl("get", "--raw", "/apis/autoscaling").stdout)
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    assert group["preferredVersion"]["version"] == "v2"
    v1 = json.loads(api.kubectl("get", "--raw", "/apis/autoscaling/v1").stdout)
    assert {r["name"] for r in v1["resources"]} == {"horizontalpodautoscalers", "horizontalpodautoscalers/status"}
    res = api.kubectl("api-resources", "--api-group=autoscaling").stdout.splitlines()
    assert [line.split()[2] for line in res[1:]] == ["autoscaling/v2"]  # one row, at the preferred version


def test_kubectl_autoscale_then_get_hpa(api):
    api.kubectl("create", "deployment", "web", "--image=nginx:1.27")
    out = api.kubectl("autoscale", "deployment", "web", "--cpu-percent=50", "--min=1", "--max=5").stdout
    assert out.strip() == "horizontalpodautoscaler.autoscaling/web autoscaled"
    v2 = json.loads(api.kubectl("get", "hpa", "web", "-o", "json").stdout)
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    assert (v2["spec"]["minReplicas"], v2["spec"]["maxReplicas"]) == (1, 5)
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
    assert v2["spec"]["metrics"] == [cpu]
    assert not (v2["metadata"].get("annotations") or {}).keys() & {METRICS, CURRENT, CONDITIONS, BEHAVIOR}
    v1 = json.loads(api.kubectl("get", "horizontalpodautoscalers.v1.autoscaling", "web", "-o", "json").stdout)
    assert v1["apiVersion"] == "autoscaling/v1" and v1["spec"]["targetCPUUtilizationPercentage"] == 50
    assert v1["metadata"]["resourceVersion"] == v2["metadata"]["resourceVersion"]
    table = api.kubectl("get", "hpa").stdout.splitlines()
    assert table[0].split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert table[1].split()[:7] == ["web", "Deployment/web", "cpu:", "<unknown>/50%", "1", "5", "0"]
    assert (
        api.kubectl("get", "horizontalpodautoscalers.v1.autoscaling").stdout.splitlines()[1].split()[:6]
        == table[1].split()[:6]
    )
    again = api.kubectl("autoscale", "deployment", "web", "--max=3", check=False)
    assert again.returncode != 0 and 'horizontalpodautoscalers.autoscaling "web" already exists' in again.stderr
    api.kubectl("delete", "hpa", "web")
    api.kubectl("delete", "deployment", "web")


def _v2_body(name: str) -> dict:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "annotations": {"team": "web"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 7,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}},
                },
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
                },
            ],
            "behavior": {
                "scaleDown": {
                    "stabilizationWindowSeconds": 30,
                    "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 15}],
                }
            },
        },
    }


def test_python_client_reads_and_writes_both_versions(api):
    from kubernetes import client

    c = api.python_client()
    v1, v2 = client.AutoscalingV1Api(c), client.AutoscalingV2Api(c)
    v1.create_namespaced_horizontal_pod_autoscaler(
        "default",
        {
            "metadata": {"name": "plain"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 4,
            },
        },
    )
    plain = v2.read_namespaced_horizontal_pod_autoscaler("plain", "default")
    assert plain.spec.min_replicas == 1  # defaulted
    only = plain.spec.metrics
    assert len(only) == 1 and only[0].resource.name == "cpu" and only[0].resource.target.average_utilization == 80
    assert v1.read_namespaced_horizontal_pod_autoscaler("plain", "default").spec.target_cpu_utilization_percentage == 80

    made = v2.create_namespaced_horizontal_pod_autoscaler("default", _v2_body("rich"))
    assert made.metadata.annotations == {"team": "web"}
    old = v1.read_namespaced_horizontal_pod_autoscaler("rich", "default")
    assert old.spec.target_cpu_utilization_percentage == 60 and (old.spec.min_replicas, old.spec.max_replicas) == (2, 7)
    notes = old.metadata.annotations
    assert notes["team"] == "web"
    assert json.loads(notes[METRICS]) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}}
    ]
    behavior = json.loads(notes[BEHAVIOR])
    assert behavior["ScaleDown"]["StabilizationWindowSeconds"] == 30
    assert behavior["ScaleDown"]["Policies"] == [{"Type": "Pods", "Value": 1, "PeriodSeconds": 15}]

    # A v1 client changes what it knows; the rest survives in the annotations it sent back.
    old.spec.max_replicas = 9
    old.spec.target_cpu_utilization_percentage = 70
    v1.replace_namespaced_horizontal_pod_autoscaler("rich", "default", old)
    now = v2.read_namespaced_horizontal_pod_autoscaler("rich", "default")
    assert now.spec.max_replicas == 9
    assert [(m.resource.name, m.resource.target.type) for m in now.spec.metrics] == [
        ("memory", "AverageValue"),
        ("cpu", "Utilization"),
    ]
    assert now.spec.metrics[1].resource.target.average_utilization == 70
    assert now.spec.behavior.scale_down.stabilization_window_seconds == 30
    assert now.metadata.annotations == {"team": "web"}

    # Status written at v2 reads at v1 ...
    v2.patch_namespaced_horizontal_pod_autoscaler_status(
        "rich",
        "default",
        {
            "status": {
                "currentReplicas": 3,
                "desiredReplicas": 4,
                "currentMetrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 91, "averageValue": "91m"}}}
                ],
                "conditions": [
                    {"type": "AbleToScale", "status": "True", "reason": "SucceededRescale",
                     "message": "the HPA controller was able to update the target scale to 4",
                     "lastTransitionTime": "2026-01-01T00:00:00Z"},
                ],
            }
        },
    )  # fmt: skip
    seen = v1.read_namespaced_horizontal_pod_autoscaler_status("rich", "default")
    assert (seen.status.current_replicas, seen.status.desired_replicas) == (3, 4)
    assert seen.status.current_cpu_utilization_percentage == 91
    assert json.loads(seen.metadata.annotations[CURRENT]) == [
        {"type": "Resource", "resource": {"name": "cpu", "currentAverageUtilization": 91, "currentAverageValue": "91m"}}
    ]
    assert json.loads(seen.metadata.annotations[CONDITIONS])[0]["reason"] == "SucceededRescale"

    # ... and a v1 status write sets the status, never the spec.
    seen.status.current_cpu_utilization_percentage = 12
    seen.status.desired_replicas = 2
    del seen.metadata.annotations[CURRENT]
    seen.spec.max_replicas = 100
    v1.replace_namespaced_horizontal_pod_autoscaler_status("rich", "default", seen)
    after = v2.read_namespaced_horizontal_pod_autoscaler("rich", "default")
    assert after.spec.max_replicas == 9 and after.status.desired_replicas == 2
    assert [m.resource.current.average_utilization for m in after.status.current_metrics] == [12]
    assert after.status.conditions[0].reason == "SucceededRescale"

    # A spec write at v1 keeps the status.
    fresh = v1.read_namespaced_horizontal_pod_autoscaler("rich", "default")
    fresh.metadata.annotations.pop(CONDITIONS)
    fresh.spec.min_replicas = 3
    v1.replace_namespaced_horizontal_pod_autoscaler("rich", "default", fresh)
    kept = v2.read_namespaced_horizontal_pod_autoscaler("rich", "default")
    assert kept.spec.min_replicas == 3 and kept.status.conditions[0].reason == "SucceededRescale"

    names = sorted(h.metadata.name for h in v1.list_namespaced_horizontal_pod_autoscaler("default").items)
    assert names == ["plain", "rich"]
    v1.delete_namespaced_horizontal_pod_autoscaler("plain", "default")
    v2.delete_namespaced_horizontal_pod_autoscaler("rich", "default")


def test_v1_watch_and_bad_annotation(api):
    from kubernetes import client, watch
    from kubernetes.client.rest import ApiException

    c = api.python_client()
    v1, v2 = client.AutoscalingV1Api(c), client.AutoscalingV2Api(c)
    listed = v1.list_namespaced_horizontal_pod_autoscaler("default")
    v2.create_namespaced_horizontal_pod_autoscaler("default", _v2_body("watched"))
    w = watch.Watch()
    seen = []
    for ev in w.stream(
        v1.list_namespaced_horizontal_pod_autoscaler,
        "default",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=10,
    ):
        seen.append((ev["type"], ev["object"].api_version, ev["object"].spec.target_cpu_utilization_percentage))
        w.stop()
    assert seen == [("ADDED", "autoscaling/v1", 60)]
    body = {
        "metadata": {"name": "broken", "annotations": {METRICS: "not json"}},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 2},
    }
    with pytest.raises(ApiException) as err:
        v1.create_namespaced_horizontal_pod_autoscaler("default", body)
    assert err.value.status == 400 and METRICS in err.value.body
    v2.delete_namespaced_horizontal_pod_autoscaler("watched", "default")
