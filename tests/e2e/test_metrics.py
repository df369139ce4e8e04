"""Resource metrics end to end (issue #36): a lab with the metrics-server addon (a control plane and two workers),
the machine's kubectl and the official Python client. `kubectl top` answers soon after `lab up`, the APIService is
Available through the aggregation layer, and turns unavailable with kube's reason when the metrics server stops —
only metrics.k8s.io then answers 503."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.e2e.test_lab import Lab, _kill_leftovers
from tests.e2e.test_pods import wait_for
from tests.e2e.test_workloads import apply

pytestmark = pytest.mark.e2e

PREFIX = "127.0.36."
ENV = {**{k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}, "PYKUBEADM_LAB_ADDRESS_PREFIX": PREFIX}
NODES = ["lab-control-plane", "lab-worker", "lab-worker2"]
CONTROL_PLANE_CONTAINERS = {
    "kube-apiserver-lab-control-plane": "kube-apiserver",
    "kube-controller-manager-lab-control-plane": "kube-controller-manager",
    "kube-scheduler-lab-control-plane": "kube-scheduler",
}


def pykubeadm(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pykubeadm", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV)


class MetricsLab(Lab):
    up_at: float = 0.0


#: The lab's cluster: a control plane and two workers, the HPA controller syncing every 5 s instead of kube's 15 s so that
#: the HPA tests wait on fewer periods (a timer of this lab's own; the product's default stays 15 s).
CLUSTER = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
kubeadmConfigPatches:
- |
  kind: ClusterConfiguration
  controllerManager:
    extraArgs:
    - {name: horizontal-pod-autoscaler-sync-period, value: 5s}
nodes:
- role: control-plane
- role: worker
- role: worker
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetricsLab]:
    lab_dir = tmp_path_factory.mktemp("metrics")
    cluster = tmp_path_factory.mktemp("metrics-config") / "cluster.yaml"
    cluster.write_text(CLUSTER)
    try:
        res = pykubeadm(
            "lab", "up", "--topology", "loopback", "--dir", str(lab_dir), "--config", str(cluster),
            "--addon", "metrics-server",
        )  # fmt: skip
        assert res.returncode == 0, f"lab up failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
        assert "[lab] Applied addon: metrics-server" in res.stdout
        lab = MetricsLab(lab_dir)
        lab.up_at = time.monotonic()
        yield lab
    finally:
        pykubeadm("lab", "down", "--dir", str(lab_dir))
        left = _kill_leftovers(lab_dir)
        assert not left, f"lab down left processes running: {left}"


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()[1:]]


def _milli(cpu: str) -> int:
    return int(cpu.removesuffix("m"))


def _mebi(mem: str) -> int:
    return int(mem.removesuffix("Mi"))


def test_kubectl_top_nodes_lists_every_node(lab: MetricsLab) -> None:
    """Every node with non-zero CPU and memory. How soon after `lab up` is a speed figure (the issue's 30 s), not
    asserted here: on a loaded 2-core runner the first scrapes can come later; the deadline only bounds a hang."""

    def top() -> list[list[str]] | None:
        res = lab.kubectl("top", "nodes", check=False)
        rows = _rows(res.stdout) if res.returncode == 0 else []
        return rows if sorted(r[0] for r in rows) == NODES else None

    rows = wait_for(top, 120 - (time.monotonic() - lab.up_at), "kubectl top nodes to list every node")
    for name, cpu, cpu_pct, mem, mem_pct in rows:
        assert _milli(cpu) > 0 and _mebi(mem) > 0, (name, cpu, mem)
        assert cpu_pct.endswith("%") and mem_pct.endswith("%")


def test_kubectl_top_pods_lists_the_control_plane_containers(lab: MetricsLab) -> None:
    def top() -> dict[tuple[str, str], tuple[str, str]] | None:
        res = lab.kubectl("top", "pods", "-n", "kube-system", "--containers", check=False)
        if res.returncode != 0:
            return None
        found = {(r[0], r[1]): (r[2], r[3]) for r in _rows(res.stdout)}
        return found if all(k in found for k in CONTROL_PLANE_CONTAINERS.items()) else None

    found = wait_for(top, 60, "kubectl top pods --containers to list the control plane")
    for key in CONTROL_PLANE_CONTAINERS.items():
        assert _mebi(found[key][1]) > 0, (key, found[key])
    api_cpu = _milli(found[("kube-apiserver-lab-control-plane", "kube-apiserver")][0])
    assert api_cpu >= 0
    # -A and --sort-by=cpu: every namespace, highest CPU first
    res = lab.kubectl("top", "pods", "-A", "--sort-by=cpu")
    rows = _rows(res.stdout)
    assert {r[0] for r in rows} >= {"kube-system"}
    cpus = [_milli(r[2]) for r in rows]
    assert cpus == sorted(cpus, reverse=True)


def test_the_apiservice_is_available(lab: MetricsLab) -> None:
    res = lab.kubectl("get", "apiservices", "v1beta1.metrics.k8s.io")
    row = _rows(res.stdout)[0]
    assert row[:3] == ["v1beta1.metrics.k8s.io", "kube-system/metrics-server", "True"]


def test_python_client_lists_node_and_pod_metrics(lab: MetricsLab) -> None:
    from kubernetes import client, config

    api = client.CustomObjectsApi(config.new_client_from_config(str(lab.admin)))
    nodes = api.list_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes")
    assert nodes["kind"] == "NodeMetricsList"
    assert sorted(i["metadata"]["name"] for i in nodes["items"]) == NODES
    for item in nodes["items"]:
        assert item["usage"]["cpu"] and item["usage"]["memory"].endswith(("Ki", "Mi"))
        assert item["window"].endswith("s") and item["timestamp"].endswith("Z")
    pods = api.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", "kube-system", "pods")
    names = {i["metadata"]["name"] for i in pods["items"]}
    assert set(CONTROL_PLANE_CONTAINERS) <= names
    one = api.get_namespaced_custom_object(
        "metrics.k8s.io", "v1beta1", "kube-system", "pods", "kube-apiserver-lab-control-plane"
    )
    assert one["kind"] == "PodMetrics" and one["containers"][0]["name"] == "kube-apiserver"
    # label selectors select by the Pods' labels
    selected = api.list_namespaced_custom_object(
        "metrics.k8s.io", "v1beta1", "kube-system", "pods", label_selector="component=kube-apiserver"
    )
    assert [i["metadata"]["name"] for i in selected["items"]] == ["kube-apiserver-lab-control-plane"]


def test_metrics_need_authorization(lab: MetricsLab) -> None:
    """A ServiceAccount without a role binding is forbidden by the metrics server's SubjectAccessReview."""
    lab.kubectl("create", "serviceaccount", "nobody")
    res = lab.kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes", "--as=system:serviceaccount:default:nobody",
                      check=False)  # fmt: skip
    assert res.returncode != 0 and "Forbidden" in res.stderr + res.stdout, res


#: Busy for `LOAD` ms out of every 100 (about LOAD % of a core; the request is 100m), idle when LOAD is 0.
LOAD_SCRIPT = """
import os, time
load = int(os.environ.get("LOAD", "0")) / 1000
while True:
    end = time.monotonic() + load
    while time.monotonic() < end:
        pass
    time.sleep(0.1 - load)
"""


def _hpa(lab: Lab) -> dict[str, Any]:
    return json.loads(lab.kubectl("get", "hpa", "web", "-o", "json").stdout)


def test_hpa_scales_a_busy_deployment_up_and_back_down(lab: MetricsLab) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "python:3.12-slim",
                            "command": ["python3", "-c", LOAD_SCRIPT],
                            "env": [{"name": "LOAD", "value": "30"}],
                            "resources": {"requests": {"cpu": "100m"}},
                        }
                    ]
                },
            },
        },
    }
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 3,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                            "averageUtilization": 50}}}
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 5}},
        },
    }  # fmt: skip
    apply(lab, deployment, hpa)
    started = time.monotonic()

    def scaled_up() -> dict[str, Any] | None:
        obj = _hpa(lab)
        return obj if (obj.get("status") or {}).get("desiredReplicas", 0) > 1 else None

    try:
        obj = wait_for(scaled_up, 60, "the HPA to raise the replicas of a busy Deployment", interval=1)
    except AssertionError as err:
        raw = lab.kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", check=False)
        pods = lab.kubectl("get", "pods", "-o", "wide", check=False).stdout
        raise AssertionError(
            f"{err}\nHPA status: {_hpa(lab).get('status')}\nPodMetrics: {raw.stdout}{raw.stderr}\n{pods}\n"
            f"{_kcm_log(lab)}"
        ) from None
    assert time.monotonic() - started <= 60
    status = obj["status"]
    assert status["lastScaleTime"]
    current = status["currentMetrics"][0]
    assert current["type"] == "Resource" and current["resource"]["name"] == "cpu"
    assert current["resource"]["current"]["averageUtilization"] > 50
    conds = {c["type"]: c for c in status["conditions"]}
    assert conds["AbleToScale"]["status"] == "True"
    assert conds["ScalingActive"]["reason"] == "ValidMetricFound"
    assert conds["ScalingActive"]["message"] == (
        "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of "
        "request)"
    )
    dep = json.loads(lab.kubectl("get", "deployment", "web", "-o", "json").stdout)
    assert dep["spec"]["replicas"] > 1
    events = lab.kubectl("get", "events", "--field-selector", "involvedObject.name=web,reason=SuccessfulRescale").stdout
    assert "cpu resource utilization (percentage of request) above target" in events
    assert "New size: " in events
    # idle: back to one replica after the short stabilization window
    lab.kubectl("set", "env", "deployment/web", "LOAD=0")

    def scaled_down() -> bool:
        spec = json.loads(lab.kubectl("get", "deployment", "web", "-o", "json").stdout)["spec"]
        return bool(spec["replicas"] == 1)

    wait_for(scaled_down, 180, "the HPA to bring an idle Deployment back to one replica", interval=2)
    described = lab.kubectl("describe", "hpa", "web").stdout
    for text in (
        "Reference:",
        "Deployment/web",
        "resource cpu on pods  (as a percentage of request):",
        "Min replicas:",
        "Max replicas:",
        "AbleToScale",
        "ScalingActive",
        "ScalingLimited",
        "SuccessfulRescale",
        "All metrics below target",
    ):
        assert text in described, f"{text!r} not in:\n{described}"


def test_hpa_reports_a_missing_request(lab: MetricsLab) -> None:
    lab.kubectl("create", "deployment", "norequest", "--image=python:3.12-slim", "--", "python3", "-c",
                "import time; time.sleep(100000)")  # fmt: skip
    res = lab.kubectl("autoscale", "deployment", "norequest", "--cpu-percent=50", "--min=1", "--max=3")  # v1
    assert res.stdout.strip() == "horizontalpodautoscaler.autoscaling/norequest autoscaled"

    def failed() -> dict[str, Any] | None:
        obj = json.loads(lab.kubectl("get", "hpa", "norequest", "-o", "json").stdout)
        conds = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
        active = conds.get("ScalingActive")
        return active if active and "missing request" in active["message"] else None

    active = wait_for(failed, 90, "the HPA to report the missing request", interval=1)
    assert active["status"] == "False"
    assert active["message"].startswith(
        "the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in "
        "container python of Pod norequest-"
    ), active


def test_node_proxy_reaches_the_kubelets_resource_metrics(lab: MetricsLab) -> None:
    out = lab.kubectl("get", "--raw", "/api/v1/nodes/lab-worker/proxy/metrics/resource").stdout
    assert "# TYPE node_cpu_usage_seconds_total counter" in out and "container_cpu_usage_seconds_total{" in out


def test_view_aggregates_the_metrics_reader(lab: MetricsLab) -> None:
    viewer = "--as=system:serviceaccount:default:viewer"
    lab.kubectl("create", "rolebinding", "viewer", "--clusterrole=view", "--serviceaccount=default:viewer")

    def allowed() -> bool:
        return lab.kubectl("auth", "can-i", "list", "pods.metrics.k8s.io", viewer, check=False).stdout.strip() == "yes"

    wait_for(allowed, 30, "view to aggregate system:aggregated-metrics-reader")
    res = lab.kubectl("top", "pods", viewer, check=False)
    assert res.returncode == 0 or "metrics not available yet" in res.stderr, res


def _kcm_log(lab: Lab) -> str:
    """The controller-manager's recent log lines (for a failure's message)."""
    res = lab.kubectl(
        "-n", "kube-system", "logs", "kube-controller-manager-lab-control-plane", "--tail=40", check=False
    )
    prev = lab.kubectl("-n", "kube-system", "logs", "kube-controller-manager-lab-control-plane", "--previous",
                       "--tail=40", check=False)  # fmt: skip
    return f"kube-controller-manager log:\n{res.stdout}\nprevious:\n{prev.stdout}"


def _condition(lab: Lab) -> dict[str, Any]:
    obj = json.loads(lab.kubectl("get", "apiservices", "v1beta1.metrics.k8s.io", "-o", "json").stdout)
    return next(c for c in obj["status"]["conditions"] if c["type"] == "Available")


def test_stopping_the_metrics_server_makes_only_metrics_unavailable(lab: MetricsLab) -> None:
    lab.kubectl("-n", "kube-system", "scale", "deployment", "metrics-server", "--replicas=0")

    def unavailable() -> dict[str, Any] | None:
        cond = _condition(lab)
        return cond if cond["status"] == "False" else None

    cond = wait_for(unavailable, 60, "the APIService to turn unavailable")
    assert cond["reason"] in ("MissingEndpoints", "FailedDiscoveryCheck"), cond
    res = lab.kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes", check=False)
    assert res.returncode != 0 and "ServiceUnavailable" in res.stderr, res
    assert lab.kubectl("get", "nodes").returncode == 0
    assert lab.kubectl("get", "--raw", "/apis/apps/v1").returncode == 0
    lab.kubectl("-n", "kube-system", "scale", "deployment", "metrics-server", "--replicas=1")
    wait_for(lambda: _condition(lab)["status"] == "True", 90, "the APIService to be available again", interval=1)
