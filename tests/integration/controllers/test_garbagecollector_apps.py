"""`kubectl delete deployment --cascade=…` with the real deployment and replicaset controllers and the garbage collector.

What must be left matches kube-controller-manager: background and foreground leave nothing (foreground removes the
ReplicaSet and Pods before the Deployment), orphan leaves the ReplicaSet without owner references and its Pods.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from harness import ControllerManager, wait_until

from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

NS = "gc-apps"


@pytest.fixture(scope="module")
def apps(api: ApiServer, start_kcm: Callable[..., ControllerManager]) -> ApiServer:
    api.kubectl("create", "namespace", NS)
    start_kcm(extra_flags=["--controllers=garbagecollector,deployment,replicaset,serviceaccount"])
    wait_until(
        lambda: api.kubectl("get", "serviceaccount", "default", "-n", NS, check=False).returncode == 0,
        20,
        interval=0.2,
        what="default ServiceAccount",
    )
    return api


def items(api: ApiServer, kind: str, app: str) -> list[dict[str, Any]]:
    out = api.kubectl("get", kind, "-n", NS, "-l", f"app={app}", "-o", "json").stdout
    return [i for i in json.loads(out)["items"] if not i["metadata"].get("deletionTimestamp")]


def deployment(api: ApiServer, name: str) -> None:
    api.kubectl("create", "deployment", name, "-n", NS, "--image=registry.k8s.io/pause:3.10", "--replicas=2")
    wait_until(lambda: len(items(api, "pods", name)) == 2, 30, interval=0.2, what=f"{name}'s two pods")


@pytest.mark.parametrize("cascade", ["background", "foreground"])
def test_delete_removes_replicasets_and_pods(apps: ApiServer, cascade: str) -> None:
    name = f"web-{cascade}"
    deployment(apps, name)
    apps.kubectl("delete", "deployment", name, "-n", NS, f"--cascade={cascade}", timeout=60)
    if cascade == "foreground":  # the Deployment went last: kubectl returned after its dependents were gone
        assert items(apps, "replicasets", name) == []
    wait_until(lambda: not items(apps, "replicasets", name), 30, interval=0.2, what="replicaset gone")
    wait_until(lambda: not items(apps, "pods", name), 30, interval=0.2, what="pods gone")


def test_orphan_keeps_replicaset_and_pods(apps: ApiServer) -> None:
    deployment(apps, "web-orphan")
    (rs,) = items(apps, "replicasets", "web-orphan")
    apps.kubectl("delete", "deployment", "web-orphan", "-n", NS, "--cascade=orphan", timeout=60)
    (left,) = items(apps, "replicasets", "web-orphan")
    assert left["metadata"]["uid"] == rs["metadata"]["uid"]
    assert "ownerReferences" not in left["metadata"]
    pods = items(apps, "pods", "web-orphan")
    assert len(pods) == 2
    assert all([r["uid"] for r in p["metadata"]["ownerReferences"]] == [rs["metadata"]["uid"]] for p in pods)
