"""The built-in kubelet's /metrics and /metrics/resource on :10250, a real kubelet process with a real static Pod (a
Python process) against our apiserver. Access is the kubelet's (authentication x509 + webhook, authorization Webhook,
anonymous off as kubeadm configures it): /metrics* is `get` on nodes/metrics, so a scraper bound to a role with
nodes/metrics gets 200, no credentials 401, and an authenticated user without it — system:monitoring alone too, as
in Kubernetes, whose system:monitoring role covers the control plane's non-resource /metrics only — 403."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.integration.controllers.harness import embedded_kubeconfig
from tests.integration.kubelet.kubelet_procs import KubeletProcess
from tests.integration.metrics.support import get, parse, value, wait_for

from pykubeadm.testing.apiserver import ApiServer, free_port, running_apiserver

pytestmark = pytest.mark.integration

NODE, IP = "metrics-node", "127.0.10.61"
SCRAPER = ("prometheus", ["monitoring-team"])


def _static_pod(name: str) -> dict[str, Any]:
    script = "import time; sum(range(2_000_000)); time.sleep(3600)"  # a little CPU, then idle
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"containers": [{"name": "app", "image": "python:3.12", "command": ["python3", "-c", script]}]},
    }


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with running_apiserver(tmp_path_factory.mktemp("api")) as server:
        rbac = [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "test:kubelet-metrics"},
                "rules": [{"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]}],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "test:kubelet-metrics"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "test:kubelet-metrics",
                },
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "monitoring-team"}],
            },
        ]
        server.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(rbac))
        yield server


@pytest.fixture(scope="module")
def node(api: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    """A node root as `kubeadm join` leaves it (a valid kubelet.conf) running one static Pod; (root, kubelet port)."""
    tmp = tmp_path_factory.mktemp("node")
    root = tmp / NODE
    (root / "etc/kubernetes/pki").mkdir(parents=True)
    (root / "etc/kubernetes/manifests").mkdir(parents=True)
    (root / "var/lib/kubelet").mkdir(parents=True)
    shutil.copy(api.pki.ca_cert, root / "etc/kubernetes/pki/ca.crt")
    cert, key = api.client_cert(f"system:node:{NODE}", ["system:nodes"])
    embedded_kubeconfig(api, root / "etc/kubernetes/kubelet.conf", f"system:node:{NODE}", cert=cert, key=key)
    port = free_port(IP)
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"},
        },
        "authorization": {"mode": "Webhook"},
        "healthzBindAddress": IP,
        "healthzPort": free_port(IP),
        "port": port,
        "staticPodPath": "/etc/kubernetes/manifests",
    }
    (root / "var/lib/kubelet/config.yaml").write_text(yaml.safe_dump(config))
    (root / "etc/kubernetes/manifests/burn.yaml").write_text(yaml.safe_dump(_static_pod("burn")))
    kubelet = KubeletProcess(
        root,
        [
            "--kubeconfig=/etc/kubernetes/kubelet.conf",
            "--config=/var/lib/kubelet/config.yaml",
            f"--node-ip={IP}",
            f"--hostname-override={NODE}",
        ],
        tmp / "kubelet.log",
    )
    kubelet.start()
    try:

        def serving() -> bool:
            if kubelet.proc is not None and kubelet.proc.poll() is not None:
                raise RuntimeError(kubelet.log()[-4000:])
            try:
                return get(f"https://{IP}:{port}/metrics", timeout=2)[0] == 401  # answering
            except OSError:
                return False

        wait_for(serving, 60, "the kubelet API")
        yield root, port
    finally:
        kubelet.stop()


def _scrape(api: ApiServer, port: int, path: str = "/metrics") -> dict[str, list]:
    status, content_type, body = get(f"https://{IP}:{port}{path}", cert=api.client_cert(*SCRAPER))
    assert status == 200, body
    assert content_type.startswith("text/plain; version=0.0.4")
    return parse(body)


def test_kubelet_metrics_count_started_pods(api: ApiServer, node: tuple[Path, int]) -> None:
    root, port = node
    first = wait_for(
        lambda: (
            (m := _scrape(api, port)) and value(m, "kubelet_running_containers", container_state="running") >= 1 and m
        ),
        60,
        "the static Pod's container running",
    )
    assert value(first, "kubelet_node_name", node=NODE) == 1
    assert value(first, "kubelet_running_pods") >= 1
    pods_before = value(first, "kubelet_started_pods_total")
    containers_before = value(first, "kubelet_started_containers_total", container_type="container")
    assert pods_before >= 1 and containers_before >= 1
    host = f"127.0.0.1:{api.port}"
    assert value(first, "rest_client_requests_total", host=host, method="POST", code="201") >= 1  # mirror Pod, Node
    requests_before = value(first, "rest_client_requests_total", host=host)
    (root / "etc/kubernetes/manifests/second.yaml").write_text(yaml.safe_dump(_static_pod("second")))
    after = wait_for(
        lambda: (
            (m := _scrape(api, port))
            and value(m, "kubelet_started_containers_total", container_type="container") > containers_before
            and value(m, "kubelet_pod_start_duration_seconds_count") >= 2
            and value(m, "rest_client_requests_total", host=host) > requests_before
            and m
        ),
        60,
        "the second static Pod started",
    )
    assert value(after, "kubelet_started_pods_total") == pods_before + 1
    assert value(after, "kubelet_running_pods") >= 2


def test_resource_metrics_measure_the_node_and_the_pod(api: ApiServer, node: tuple[Path, int]) -> None:
    _, port = node
    pod = f"burn-{NODE}"
    labels = {"container": "app", "namespace": "kube-system", "pod": pod}
    m = wait_for(
        lambda: (
            (m := _scrape(api, port, "/metrics/resource"))
            and value(m, "container_cpu_usage_seconds_total", **labels) > 0
            and m
        ),
        60,
        "the static Pod's CPU usage",
    )
    assert value(m, "node_cpu_usage_seconds_total") > 0
    assert value(m, "node_memory_working_set_bytes") > 0
    assert value(m, "container_memory_working_set_bytes", **labels) > 1_000_000  # a Python process: megabytes
    assert value(m, "pod_cpu_usage_seconds_total", namespace="kube-system", pod=pod) >= value(
        m, "container_cpu_usage_seconds_total", **labels
    )
    assert value(m, "pod_memory_working_set_bytes", namespace="kube-system", pod=pod) > 0
    started = value(m, "container_start_time_seconds", **labels)
    assert started > 1_600_000_000
    assert value(m, "resource_scrape_error") == 0 and value(m, "scrape_error") == 0
    samples = [s for s in m["container_cpu_usage_seconds"] if s.labels == labels]
    assert samples and samples[0].timestamp is not None  # kube stamps resource metrics with their measurement time


def test_kubelet_metrics_access(api: ApiServer, node: tuple[Path, int]) -> None:
    _, port = node
    for path in ("/metrics", "/metrics/resource"):
        url = f"https://{IP}:{port}{path}"
        assert get(url)[0::2] == (401, "Unauthorized")
        status, _, body = get(url, cert=api.client_cert("mallory", ["developers"]))
        assert (status, body) == (403, "Forbidden (user=mallory, verb=get, resource=nodes, subresource=metrics)")
        status, _, body = get(url, cert=api.client_cert("monitor-only", ["system:monitoring"]))
        assert (status, body) == (403, "Forbidden (user=monitor-only, verb=get, resource=nodes, subresource=metrics)")
