"""`--controllers=*,-deployment` switches the deployment controller off and leaves the replicaset controller on."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from harness import token_request_available, wait_until
from lightkube.resources.apps_v1 import Deployment, ReplicaSet
from lightkube.resources.core_v1 import Pod
from workloads import grant_apps_roles_to_kcm_user

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration


def test_disabled_deployment_controller_leaves_deployments_alone(api: ApiServer, start_kcm: Any) -> None:
    if not token_request_available(api):
        grant_apps_roles_to_kcm_user(api)
    kcm = start_kcm(extra_flags=["--controllers=*,-deployment"])
    admin = sync_client(api.kubeconfig())
    api.kubectl("create", "deployment", "web", "--image=registry.k8s.io/pause:3.10", "--replicas=2", "-n", "default")
    # a bare ReplicaSet created afterwards gets its Pods: the controller-manager is up and syncing
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "bare", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "bare"}},
            "template": {
                "metadata": {"labels": {"app": "bare"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump(rs))
    wait_until(lambda: len(list(admin.list(Pod, namespace="default", labels={"app": "bare"}))) == 1, 30, what="pod")
    wait_until(lambda: admin.get(ReplicaSet, "bare", namespace="default").status.observedGeneration, 30, what="rs")
    assert [r.metadata.name for r in admin.list(ReplicaSet, namespace="default")] == ["bare"]
    d = admin.get(Deployment, "web", namespace="default")
    assert not (d.status and d.status.observedGeneration)
    assert not list(admin.list(Pod, namespace="default", labels={"app": "web"}))
    started = next(line for line in kcm.log().splitlines() if "starting controllers:" in line)
    assert "replicaset" in started and "deployment" not in started.replace("deployment-", "")
