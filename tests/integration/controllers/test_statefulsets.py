"""The statefulset controller in a real kube-controller-manager against our apiserver, with a stand-in kubelet:
ordered creation, stable names and claims, a partitioned rolling update with `kubectl rollout status|history|undo`,
scale down keeping claims and the whenScaled retention policy."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from harness import ControllerManager, token_request_available, wait_until
from lightkube import Client
from lightkube.resources.apps_v1 import ControllerRevision, StatefulSet
from lightkube.resources.core_v1 import PersistentVolumeClaim, Pod
from workloads import FakeKubelet, grant_apps_roles_to_kcm_user

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration

NS = "default"


@pytest.fixture(scope="module")
def kcm(api: ApiServer, start_kcm: Any) -> ControllerManager:
    if not token_request_available(api):
        grant_apps_roles_to_kcm_user(api)
    return start_kcm(extra_flags=["--controllers=*,-nodelifecycle,-taint-eviction-controller"])  # type: ignore[no-any-return]


def statefulset(replicas: int, image: str = "busybox:1.36", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {
            "replicas": replicas,
            "serviceName": "nginx",
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {
                    "containers": [
                        {"name": "web", "image": image, "volumeMounts": [{"name": "www", "mountPath": "/www"}]}
                    ]
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "www"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                }
            ],
            **spec,
        },
    }


def live_pods(admin: Client) -> dict[str, Pod]:
    return {
        p.metadata.name: p
        for p in admin.list(Pod, namespace=NS, labels={"app": "nginx"})
        if not p.metadata.deletionTimestamp
    }


def claims(admin: Client) -> set[str]:
    return {
        c.metadata.name for c in admin.list(PersistentVolumeClaim, namespace=NS) if c.metadata.name.startswith("www")
    }


def synced(admin: Client) -> Any:
    sts = admin.get(StatefulSet, "web", namespace=NS)
    return sts if sts.status and sts.status.observedGeneration == sts.metadata.generation else None


def test_ordered_creation_identity_rolling_update_and_undo(api: ApiServer, kcm: ControllerManager) -> None:
    admin = sync_client(api.kubeconfig())
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump(statefulset(2)))
    # no kubelet yet: web-0 never becomes Ready, so web-1 is not made (the controller wrote its status meanwhile)
    wait_until(lambda: "web-0" in live_pods(admin) and synced(admin), 30, what="web-0 and a status")
    wait_until(lambda: synced(admin) and synced(admin).status.replicas == 1, 30, what="status replicas 1")
    assert set(live_pods(admin)) == {"web-0"}
    assert claims(admin) == {"www-web-0"}
    web0 = live_pods(admin)["web-0"]
    sts = admin.get(StatefulSet, "web", namespace=NS)
    assert web0.metadata.labels["statefulset.kubernetes.io/pod-name"] == "web-0"
    assert web0.metadata.labels["apps.kubernetes.io/pod-index"] == "0"
    first_revision = sts.status.updateRevision
    assert web0.metadata.labels["controller-revision-hash"] == first_revision
    assert (web0.spec.hostname, web0.spec.subdomain) == ("web-0", "nginx")
    volume = next(v for v in web0.spec.volumes if v.name == "www")
    assert volume.persistentVolumeClaim.claimName == "www-web-0"

    with FakeKubelet(api, NS):
        out = api.kubectl("rollout", "status", "sts/web", "--timeout=60s", timeout=90).stdout
        assert "partitioned roll out complete" in out or "statefulset rolling update complete" in out
        assert set(live_pods(admin)) == {"web-0", "web-1"} and claims(admin) == {"www-web-0", "www-web-1"}
        st = wait_until(lambda: (s := synced(admin)) and s.status.availableReplicas == 2 and s.status, 30, what="2")
        assert (st.replicas, st.readyReplicas, st.currentReplicas, st.updatedReplicas) == (2, 2, 2, 2)
        assert st.currentRevision == st.updateRevision == first_revision and st.collisionCount == 0

        # a partitioned rolling update changes only web-1
        patch = {"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}},
                          "template": {"spec": {"containers": [{"name": "web", "image": "busybox:1.37"}]}}}}  # fmt: skip
        api.kubectl("patch", "sts", "web", "--type=strategic", "-p", yaml.safe_dump(patch))

        def rolled() -> bool:
            pods = live_pods(admin)
            return set(pods) == {"web-0", "web-1"} and pods["web-1"].spec.containers[0].image == "busybox:1.37"

        wait_until(rolled, 60, what="web-1 updated")
        out = api.kubectl("rollout", "status", "sts/web", "--timeout=60s", timeout=90).stdout
        assert "partitioned roll out complete: 1 new pods have been updated" in out
        pods = live_pods(admin)
        assert pods["web-0"].spec.containers[0].image == "busybox:1.36"
        st = synced(admin).status
        assert st.currentRevision == first_revision and st.updateRevision != first_revision
        assert (st.currentReplicas, st.updatedReplicas) == (1, 1)
        revisions = admin.list(ControllerRevision, namespace=NS, labels={"app": "nginx"})
        assert sorted(r.revision for r in revisions) == [1, 2]
        history = api.kubectl("rollout", "history", "sts/web").stdout
        assert "REVISION" in history and "1" in history and "2" in history

        api.kubectl("rollout", "undo", "sts/web")

        def undone() -> bool:
            pods = live_pods(admin)
            return set(pods) == {"web-0", "web-1"} and pods["web-1"].spec.containers[0].image == "busybox:1.36"

        wait_until(undone, 60, what="web-1 rolled back")
        assert live_pods(admin)["web-1"].metadata.labels["controller-revision-hash"] == first_revision

        # scale to 1: web-1 goes, its claim stays (Retain)
        api.kubectl("scale", "sts", "web", "--replicas=1")
        wait_until(lambda: set(live_pods(admin)) == {"web-0"}, 60, what="scaled to 1")
        assert claims(admin) == {"www-web-0", "www-web-1"}
        # back to 2: web-1 gets its claim again; whenScaled: Delete then removes it on the next scale down
        api.kubectl("scale", "sts", "web", "--replicas=2")
        wait_until(lambda: set(live_pods(admin)) == {"web-0", "web-1"}, 60, what="scaled to 2")
        policy = {"spec": {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"}}}
        api.kubectl("patch", "sts", "web", "--type=merge", "-p", yaml.safe_dump(policy))
        api.kubectl("scale", "sts", "web", "--replicas=1")
        wait_until(lambda: claims(admin) == {"www-web-0"}, 60, what="claim of web-1 removed")
        assert set(live_pods(admin)) == {"web-0"}
