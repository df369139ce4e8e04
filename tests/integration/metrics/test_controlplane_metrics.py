"""/metrics on the built-in kube-controller-manager (10257) and kube-scheduler (10259), real processes against our
apiserver: Prometheus text with kube's series (workqueue_*, leader_election_master_status, scheduler_*), counters
that count, and kube's delegated access: the system:monitoring group (a client certificate) or a ServiceAccount bound
to the system:monitoring ClusterRole (a token the API reviews) get 200; no credentials is system:anonymous → 403;
a token that does not authenticate → 401; an authenticated user without the role → 403."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import Node, NodeStatus
from tests.integration.controllers.harness import (
    ControllerManager,
    embedded_kubeconfig,
    grant_controller_roles_to_kcm_user,
    kubeadm_rbac,
    token_request_available,
)
from tests.integration.metrics.support import get, parse, status_json, value, wait_for

from pykubeadm.client import sync_client
from pykubeadm.controllers.controllerutil_api import model
from pykubeadm.testing.apiserver import ApiServer, Pki, free_port, generate_pki, running_apiserver

pytestmark = pytest.mark.integration

MONITORING = ("prometheus", ["system:monitoring"])


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with running_apiserver(tmp_path_factory.mktemp("api")) as server:
        kubeadm_rbac(server)
        if not token_request_available(server):
            grant_controller_roles_to_kcm_user(server)
        # the scheduler (no --client-ca-file in kubeadm's manifest) takes its client CA from the ConfigMap
        # kube-system/extension-apiserver-authentication, which the apiserver publishes by itself
        yield server


@pytest.fixture(scope="module")
def monitoring_token(api: ApiServer) -> str | None:
    """A ServiceAccount token bound to the system:monitoring ClusterRole (None without TokenRequest)."""
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "test:prometheus"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:monitoring"},
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "default"}],
    }
    api.kubectl("create", "serviceaccount", "prometheus", "-n", "default", check=False)
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump(binding))
    res = api.kubectl("create", "token", "prometheus", "-n", "default", check=False)
    return res.stdout.strip() if res.returncode == 0 else None


@pytest.fixture(scope="module")
def foreign_pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """Another cluster's CA, with a system:masters client certificate of its own."""
    return generate_pki(tmp_path_factory.mktemp("foreign"))


@pytest.fixture(scope="module")
def kcm(api: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerManager]:
    manager = ControllerManager(api, tmp_path_factory.mktemp("kcm"), extra_flags=["--profiling=false"])
    try:
        yield manager.start(timeout=60)
    finally:
        manager.stop()


@pytest.fixture(scope="module")
def scheduler(api: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A kube-scheduler with the flags of kubeadm's manifest; its secure port."""
    directory = tmp_path_factory.mktemp("scheduler")
    cert, key = api.pki.sign("system:kube-scheduler", name="scheduler")
    kubeconfig = embedded_kubeconfig(api, directory / "scheduler.conf", "system:kube-scheduler", cert=cert, key=key)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    log_path = directory / "scheduler.log"
    flags = [
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=true",
        f"--secure-port={port}",
    ]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pykubeadm", "component", "kube-scheduler", *flags],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:

        def alive() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(log_path.read_text())
            try:
                return get(f"https://127.0.0.1:{port}/livez", timeout=2)[0] == 200
            except OSError:
                return False

        wait_for(alive, 60, "kube-scheduler /livez")
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def add_node(client: Client, name: str) -> None:
    """A Ready Node with nothing on it (what a kubelet would register)."""
    node = client.create(model(Node, {"metadata": {"name": name}}))
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = node.to_dict()
    body["status"] = {
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now,
             "lastTransitionTime": now}
        ],
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
    }  # fmt: skip
    client.replace(model(NodeStatus, body), name)


def _scrape(api: ApiServer, port: int) -> dict[str, list]:
    status, content_type, body = get(f"https://127.0.0.1:{port}/metrics", cert=api.client_cert(*MONITORING))
    assert status == 200, body
    assert content_type.startswith("text/plain; version=0.0.4")
    return parse(body)


def _access_follows_delegated_rbac(api: ApiServer, port: int, token: str | None, foreign: Pki) -> None:
    url = f"https://127.0.0.1:{port}/metrics"
    status, _, body = get(url)
    assert status == 403
    forbidden = status_json(body)
    assert forbidden["reason"] == "Forbidden"
    assert forbidden["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    status, _, body = get(url, token="not-a-real-token")
    assert (status, status_json(body)["reason"]) == (401, "Unauthorized")
    status, _, body = get(url, cert=api.client_cert("mallory", ["developers"]))
    assert (status, status_json(body)["message"]) == (403, 'forbidden: User "mallory" cannot get path "/metrics"')
    if token is not None:
        status, _, body = get(url, token=token)
        assert status == 200 and "leader_election_master_status" in body
    status, _, body = get(url, cert=(foreign.admin_cert, foreign.admin_key))  # another CA's system:masters
    assert (status, status_json(body)["reason"]) == (401, "Unauthorized")
    status, _, body = get(url, cert=(api.pki.admin_cert, api.pki.admin_key))  # system:masters is always allowed
    assert status == 200
    assert get(f"https://127.0.0.1:{port}/healthz")[0] == 200  # health stays open to probes


def test_controller_manager_metrics(
    api: ApiServer, kcm: ControllerManager, monitoring_token: str | None, foreign_pki: Pki
) -> None:
    leading = wait_for(
        lambda: (
            value(m := _scrape(api, kcm.port), "leader_election_master_status", name="kube-controller-manager") == 1
            and m
        ),
        60,
        "the controller-manager to lead",
    )
    assert "process_cpu_seconds_total" in {s.name for s in leading["process_cpu_seconds"]}
    before = value(leading, "workqueue_adds_total", name="serviceaccount")
    api.kubectl("create", "namespace", "metrics-kcm")
    after = wait_for(
        lambda: (
            (m := _scrape(api, kcm.port)) and value(m, "workqueue_adds_total", name="serviceaccount") > before and m
        ),
        30,
        "a serviceaccount workqueue add",
    )
    assert value(after, "workqueue_work_duration_seconds_count", name="serviceaccount") >= 1
    assert any(s.labels == {"name": "serviceaccount"} for s in after["workqueue_depth"])
    _access_follows_delegated_rbac(api, kcm.port, monitoring_token, foreign_pki)


def test_scheduler_metrics(api: ApiServer, scheduler: int, monitoring_token: str | None, foreign_pki: Pki) -> None:
    wait_for(
        lambda: value(_scrape(api, scheduler), "leader_election_master_status", name="kube-scheduler") == 1,
        60,
        "the scheduler to lead",
    )
    api.kubectl("create", "namespace", "metrics-sched")
    api.kubectl("run", "lonely", "-n", "metrics-sched", "--image=registry.k8s.io/pause:3.10")
    after = wait_for(
        lambda: (
            (m := _scrape(api, scheduler))
            and value(m, "scheduler_schedule_attempts_total", result="unschedulable", profile="default-scheduler") >= 1
            and m
        ),
        30,
        "an unschedulable attempt (no nodes)",
    )
    assert value(after, "scheduler_scheduling_attempt_duration_seconds_count", result="unschedulable") >= 1
    assert value(after, "scheduler_pending_pods", queue="unschedulable") == 1
    assert {s.labels["queue"] for s in after["scheduler_pending_pods"]} == {
        "active",
        "backoff",
        "unschedulable",
        "gated",
    }
    admin = sync_client(api.kubeconfig())
    try:
        add_node(admin, "metrics-n1")  # a Ready Node: the pending Pod is retried and bound
    finally:
        admin.close()
    bound = wait_for(
        lambda: (
            (m := _scrape(api, scheduler))
            and value(m, "scheduler_schedule_attempts_total", result="scheduled", profile="default-scheduler") >= 1
            and m
        ),
        30,
        "the Pod scheduled",
    )
    assert value(bound, "scheduler_pod_scheduling_attempts_count") >= 1
    assert value(bound, "scheduler_pending_pods", queue="unschedulable") == 0
    _access_follows_delegated_rbac(api, scheduler, monitoring_token, foreign_pki)


def test_bootstrap_policy_grants_metrics_to_monitoring(api: ApiServer) -> None:
    role = yaml.safe_load(api.kubectl("get", "clusterrole", "system:monitoring", "-o", "yaml").stdout)
    assert any("/metrics" in (rule.get("nonResourceURLs") or []) and "get" in rule["verbs"] for rule in role["rules"])


def test_profiling_endpoints(api: ApiServer, kcm: ControllerManager, scheduler: int) -> None:
    """kube-bench's --profiling: on (the scheduler's default), /debug/pprof/ answers only authorized callers; off
    (the controller-manager here), 404 even for system:masters."""
    admin = (api.pki.admin_cert, api.pki.admin_key)
    status, _, body = get(f"https://127.0.0.1:{scheduler}/debug/pprof/", cert=admin)
    assert status == 200 and "goroutine" in body
    status, _, body = get(f"https://127.0.0.1:{scheduler}/debug/pprof/goroutine?debug=1", cert=admin)
    assert status == 200 and "task " in body
    status, _, body = get(f"https://127.0.0.1:{scheduler}/debug/pprof/", cert=api.client_cert("mallory"))
    assert (status, status_json(body)["message"]) == (403, 'forbidden: User "mallory" cannot get path "/debug/pprof/"')
    assert get(f"https://127.0.0.1:{kcm.port}/debug/pprof/", cert=admin)[0] == 404
