"""Helpers for the workload-controller integration tests: a stand-in kubelet that marks Pods Running and Ready,
a Pod watcher that records what every Pod event showed, and the RBAC the apps controllers need when the apiserver
cannot issue ServiceAccount tokens."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import yaml
from lightkube import Client
from lightkube.resources.core_v1 import Node, NodeStatus, Pod, PodStatus

from pykubeadm.client import ApiError, sync_client
from pykubeadm.testing.apiserver import ApiServer

APPS_ROLES = ("replicaset-controller", "deployment-controller", "daemon-set-controller")


def grant_apps_roles_to_kcm_user(api: ApiServer) -> None:
    """Bind the apps controllers' roles to the controller-manager's own user (used without TokenRequest)."""
    docs = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"test:kcm:{role}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"system:controller:{role}",
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-controller-manager"}
            ],
        }
        for role in APPS_ROLES
    ]
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def _ready(pod: Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or [])) if pod.status else False


class FakeKubelet:
    """Marks every Pod of a namespace Running and Ready, and confirms graceful deletions (as a kubelet would)."""

    def __init__(self, api: ApiServer, namespace: str, accept: Callable[[Pod], bool] = lambda p: True):
        self.client: Client = sync_client(api.kubeconfig())
        self.namespace = namespace
        self.accept = accept
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _mark(self, pod: Pod) -> None:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = pod.to_dict()
        body["status"] = {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": now},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
            ],
            "startTime": now,
        }
        with contextlib.suppress(ApiError):  # changed or gone meanwhile: the next round retries
            self.client.replace(PodStatus.from_dict(body), pod.metadata.name, namespace=self.namespace)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for pod in self.client.list(Pod, namespace=self.namespace):
                    if not self.accept(pod):
                        continue
                    if pod.metadata.deletionTimestamp:  # the containers stopped: confirm the deletion
                        self.client.delete(Pod, pod.metadata.name, namespace=self.namespace, grace_period=0)
                    elif not _ready(pod):
                        self._mark(pod)
            except Exception:
                pass
            self._stop.wait(0.1)

    def __enter__(self) -> FakeKubelet:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(10)


class PodWatch:
    """Watches a namespace's Pods (or another kind) and keeps, after each event, the live objects (name → object)."""

    def __init__(self, api: ApiServer, namespace: str, res: type = Pod):
        self.client: Client = sync_client(api.kubeconfig(), timeout=300)
        self.namespace = namespace
        self.res = res
        self.live: dict[str, Any] = {}
        self.ever: set[str] = set()
        self.snapshots: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = threading.Event()

    def _run(self) -> None:
        listing = self.client.list(self.res, namespace=self.namespace)
        with self.lock:
            for pod in listing:
                self.live[pod.metadata.name] = pod
                self.ever.add(pod.metadata.name)
        rv = listing.resourceVersion
        self._started.set()
        try:
            for event, pod in self.client.watch(self.res, namespace=self.namespace, resource_version=rv):
                with self.lock:
                    if event == "DELETED":
                        self.live.pop(pod.metadata.name, None)
                    else:
                        self.live[pod.metadata.name] = pod
                        self.ever.add(pod.metadata.name)
                    self.snapshots.append(dict(self.live))
        except Exception:
            pass

    def start(self) -> PodWatch:
        self._thread.start()
        self._started.wait(10)
        return self

    def min_over(self, count: Callable[[dict[str, Any]], int]) -> int:
        with self.lock:
            return min((count(s) for s in self.snapshots), default=0)

    def max_over(self, count: Callable[[dict[str, Any]], int]) -> int:
        with self.lock:
            return max((count(s) for s in self.snapshots), default=0)


def ready_count(pods: dict[str, Pod]) -> int:
    return sum(1 for p in pods.values() if _ready(p) and not p.metadata.deletionTimestamp)


@contextmanager
def watching(api: ApiServer, namespace: str) -> Iterator[PodWatch]:
    yield PodWatch(api, namespace).start()


def add_ready_node(
    client: Client, name: str, *, taints: list[dict[str, str]] | None = None, labels: dict[str, str] | None = None
) -> None:
    """A Node object with a Ready condition (retrying the status write while controllers touch the Node)."""
    client.create(
        Node.from_dict({"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}})
    )
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    for _ in range(20):
        body = client.get(Node, name).to_dict()
        body["status"] = {**(body.get("status") or {}), "conditions": [ready]}
        try:
            client.replace(NodeStatus.from_dict(body), name)
            return
        except ApiError as err:
            if err.status.code != 409:
                raise
    raise AssertionError(f"could not mark node {name} Ready")
