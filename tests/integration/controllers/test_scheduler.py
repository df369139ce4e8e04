"""The built-in kube-scheduler against our apiserver: health endpoints, its Lease, and binding pending Pods."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from harness import embedded_kubeconfig, wait_until
from lightkube import Client
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Event, Node, NodeStatus, Pod

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer, free_port

pytestmark = pytest.mark.integration


def get(port: int, path: str) -> tuple[int, str]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", context=ctx, timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.fixture(scope="module")
def scheduler(api: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    directory = tmp_path_factory.mktemp("scheduler")
    cert, key = api.pki.sign("system:kube-scheduler", name="scheduler")
    kubeconfig = embedded_kubeconfig(api, directory / "scheduler.conf", "system:kube-scheduler", cert=cert, key=key)
    port = free_port()
    log_path = directory / "scheduler.log"
    env = {k: v for k, v in os.environ.items() if k != "PYKUBEADM_ROOT_DIR"}
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pykubeadm",
                "component",
                "kube-scheduler",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--kubeconfig={kubeconfig}",
                "--leader-elect=true",
                f"--secure-port={port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        wait_until(lambda: _alive(port, proc, log_path), 30, interval=0.1, what="scheduler /livez")
        yield port, log_path
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _alive(port: int, proc: subprocess.Popen[bytes], log_path: Path) -> bool:
    if proc.poll() is not None:
        raise RuntimeError(log_path.read_text())
    try:
        return get(port, "/livez")[0] == 200
    except OSError:
        return False


def add_node(
    client: Client, name: str, *, ready: bool = True, taints: list | None = None, labels: dict | None = None
) -> None:
    node = client.create(
        Node.from_dict({"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}})
    )
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = node.to_dict()
    body["status"] = {
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                "reason": "KubeletReady",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        ]
    }
    client.replace(NodeStatus.from_dict(body), name)


def pod(name: str, **spec: object) -> Pod:
    return Pod.from_dict(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}], **spec},
        }
    )


def _events(client: Client, pod_name: str, reason: str) -> list[Event]:
    return [
        e
        for e in client.list(Event, namespace="default", fields={"involvedObject.name": pod_name})
        if e.reason == reason
    ]


def node_of(client: Client, name: str) -> str | None:
    p = client.get(Pod, name, namespace="default")
    return p.spec.nodeName if p.spec else None


def test_health_endpoints_and_lease(api: ApiServer, scheduler: tuple[int, Path]) -> None:
    port, _ = scheduler
    for path in ("/livez", "/readyz", "/healthz"):
        assert get(port, path) == (200, "ok")
    assert get(port, "/metrics")[0] == 403
    admin = sync_client(api.kubeconfig())
    lease = wait_until(lambda: admin.get(Lease, "kube-scheduler", namespace="kube-system"), 10, what="lease")
    assert lease.spec.holderIdentity and lease.spec.leaseDurationSeconds == 15


def test_pods_are_bound_respecting_not_ready_taints_and_selectors(api: ApiServer, scheduler: tuple[int, Path]) -> None:
    admin = sync_client(api.kubeconfig())
    api.kubectl("create", "serviceaccount", "default", "-n", "default", check=False)  # no KCM in this module
    add_node(
        admin,
        "cp-1",
        taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
        labels={"node-role.kubernetes.io/control-plane": ""},
    )
    add_node(admin, "worker-a", labels={"disk": "ssd"})
    add_node(admin, "worker-b")
    not_ready = [{"key": "node.kubernetes.io/not-ready", "effect": e} for e in ("NoSchedule", "NoExecute")]
    add_node(admin, "broken", ready=False, taints=not_ready)  # as the nodelifecycle controller taints it
    for i in range(4):
        admin.create(pod(f"spread-{i}"))
    placed = wait_until(
        lambda: (lambda n: n if all(n) else None)([node_of(admin, f"spread-{i}") for i in range(4)]),
        10,
        what="pods bound",
    )
    assert sorted(placed) == ["worker-a", "worker-a", "worker-b", "worker-b"]  # least allocated first
    events = wait_until(lambda: _events(admin, "spread-0", "Scheduled"), 10, what="Scheduled event")
    assert events[0].message == f"Successfully assigned default/spread-0 to {placed[0]}"
    assert events[0].source.component == "default-scheduler" and events[0].type == "Normal"

    admin.create(pod("wants-ssd", nodeSelector={"disk": "ssd"}))
    admin.create(
        pod(
            "tolerates-cp",
            nodeSelector={"node-role.kubernetes.io/control-plane": ""},
            tolerations=[
                {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
            ],
        )
    )
    assert wait_until(lambda: node_of(admin, "wants-ssd"), 10, what="ssd pod") == "worker-a"
    assert wait_until(lambda: node_of(admin, "tolerates-cp"), 10, what="cp pod") == "cp-1"

    admin.create(pod("nowhere", nodeSelector={"gpu": "yes"}))

    def unschedulable() -> object:
        p = admin.get(Pod, "nowhere", namespace="default")
        return [c for c in (p.status.conditions or []) if c.type == "PodScheduled"] if p.status else None

    (cond,) = wait_until(unschedulable, 10, what="PodScheduled=False")
    assert (cond.status, cond.reason) == ("False", "Unschedulable")
    assert cond.message == (
        "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, "
        "2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )
    (event,) = wait_until(lambda: _events(admin, "nowhere", "FailedScheduling"), 10, what="FailedScheduling event")
    assert event.type == "Warning" and event.message == cond.message
    time.sleep(0.5)
    assert node_of(admin, "nowhere") is None
