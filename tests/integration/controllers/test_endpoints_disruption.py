"""endpoint, endpointslice and disruption controllers against our apiserver; the test plays the kubelet by writing
Pod status (and confirming deletions with grace 0). Eviction through the pods/eviction API and `kubectl drain`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from harness import ControllerManager, wait_until
from lightkube import ApiError, Client
from lightkube.resources.core_v1 import Endpoints, Namespace, Node, Pod, PodStatus, Service, ServiceAccount
from lightkube.resources.discovery_v1 import EndpointSlice
from lightkube.resources.policy_v1 import PodDisruptionBudget

from pykubeadm.client import sync_client
from pykubeadm.testing.apiserver import ApiServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def admin(api: ApiServer, start_kcm: Callable[..., ControllerManager]) -> Client:
    start_kcm(extra_flags=["--controllers=endpoint,endpointslice,disruption,serviceaccount"])
    return sync_client(api.kubeconfig())


def make_namespace(client: Client, ns: str) -> None:
    """A namespace whose `default` ServiceAccount exists (Pods need it for admission)."""
    client.create(Namespace.from_dict({"metadata": {"name": ns}}))
    wait_until(lambda: get_or_none(client, ServiceAccount, "default", ns), 20, interval=0.1, what="default SA")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_pod(
    client: Client, ns: str, name: str, ip: str, *, ready: bool, node: str = "node-a", port: int = 8080
) -> None:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"app": "web"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs", "uid": "rs-uid", "controller": True}
            ],
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "busybox", "ports": [{"name": "web", "containerPort": port}]}],
        },
    }
    client.create(Pod.from_dict(body))
    set_status(client, ns, name, ip, ready)


def set_status(client: Client, ns: str, name: str, ip: str, ready: bool) -> None:
    """What the kubelet reports: Running with an IP and the Ready condition."""
    for _ in range(10):
        pod = client.get(Pod, name, namespace=ns).to_dict()
        pod["status"] = {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now()}],
        }
        try:
            client.replace(PodStatus.from_dict(pod), name, namespace=ns)
            return
        except ApiError as err:
            if err.status.code != 409:
                raise
    raise AssertionError("could not write pod status")


def make_service(client: Client, ns: str) -> None:
    client.create(
        Service.from_dict(
            {
                "metadata": {"name": "web", "namespace": ns, "labels": {"tier": "front"}},
                "spec": {
                    "selector": {"app": "web"},
                    "ports": [{"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"}],
                },
            }
        )
    )


def addresses(ep: Any) -> tuple[list[str], list[str]]:
    ready: list[str] = []
    not_ready: list[str] = []
    for subset in ep.subsets or []:
        ready += [a.ip for a in subset.addresses or []]
        not_ready += [a.ip for a in subset.notReadyAddresses or []]
    return sorted(ready), sorted(not_ready)


def get_or_none(client: Client, res: type, name: str, ns: str) -> Any:
    try:
        return client.get(res, name, namespace=ns)
    except ApiError as err:
        if err.status.code == 404:
            return None
        raise


def test_service_endpoints_and_endpointslice(admin: Client) -> None:
    ns = "ep-test"
    make_namespace(admin, ns)
    make_service(admin, ns)
    make_pod(admin, ns, "web-1", "127.0.20.1", ready=True)
    make_pod(admin, ns, "web-2", "127.0.20.2", ready=True)
    make_pod(admin, ns, "web-3", "127.0.20.3", ready=False)

    def endpoints() -> Any:
        ep = get_or_none(admin, Endpoints, "web", ns)
        return ep if ep is not None and addresses(ep) == (["127.0.20.1", "127.0.20.2"], ["127.0.20.3"]) else None

    ep = wait_until(endpoints, 20, interval=0.1, what="Endpoints with 2 ready and 1 not-ready address")
    (subset,) = ep.subsets
    assert [(p.name, p.port, p.protocol) for p in subset.ports] == [("http", 8080, "TCP")]
    addr = next(a for a in subset.addresses if a.ip == "127.0.20.1")
    assert (addr.nodeName, addr.targetRef.kind, addr.targetRef.name) == ("node-a", "Pod", "web-1")
    assert ep.metadata.labels == {"tier": "front", "endpoints.kubernetes.io/managed-by": "endpoint-controller"}
    assert "endpoints.kubernetes.io/last-change-trigger-time" in (ep.metadata.annotations or {})

    svc_uid = admin.get(Service, "web", namespace=ns).metadata.uid

    def slice_() -> Any:
        slices = list(admin.list(EndpointSlice, namespace=ns, labels={"kubernetes.io/service-name": "web"}))
        if len(slices) != 1 or len(slices[0].endpoints or []) != 3:
            return None
        return slices[0]

    es = wait_until(slice_, 20, interval=0.1, what="one EndpointSlice with 3 endpoints")
    assert es.metadata.name.startswith("web-")
    assert es.metadata.labels["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
    assert es.addressType == "IPv4"
    assert [(p.name, p.port) for p in es.ports] == [("http", 8080)]
    (owner,) = es.metadata.ownerReferences
    assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Service", "web", svc_uid, True)
    by_name = {e.targetRef.name: e for e in es.endpoints}
    assert by_name["web-1"].conditions.ready is True and by_name["web-1"].nodeName == "node-a"
    assert by_name["web-3"].conditions.ready is False and by_name["web-3"].conditions.serving is False

    # the not-ready Pod becomes ready; a Pod goes away
    set_status(admin, ns, "web-3", "127.0.20.3", True)
    admin.delete(Pod, "web-1", namespace=ns, grace_period=0)
    wait_until(
        lambda: addresses(admin.get(Endpoints, "web", namespace=ns)) == (["127.0.20.2", "127.0.20.3"], []),
        20,
        interval=0.1,
        what="Endpoints following the Pods",
    )

    def slice_endpoints() -> list[tuple[str, bool]]:
        slices = admin.list(EndpointSlice, namespace=ns, labels={"kubernetes.io/service-name": "web"})
        return sorted((e.targetRef.name, e.conditions.ready) for sl in slices for e in sl.endpoints or [])

    wait_until(
        lambda: slice_endpoints() == [("web-2", True), ("web-3", True)],
        20,
        interval=0.1,
        what="EndpointSlice following the Pods",
    )
    # deleted Endpoints come back
    admin.delete(Endpoints, "web", namespace=ns)
    wait_until(
        lambda: (
            (ep := get_or_none(admin, Endpoints, "web", ns)) is not None
            and addresses(ep) == (["127.0.20.2", "127.0.20.3"], [])
        ),
        20,
        interval=0.1,
        what="Endpoints recreated",
    )
    # the apiserver's own Service is not ours to manage
    k8s = admin.get(Endpoints, "kubernetes", namespace="default")
    assert "endpointslice.kubernetes.io/skip-mirror" in (k8s.metadata.labels or {})


def pdb_status(client: Client, ns: str) -> Any:
    return client.get(PodDisruptionBudget, "web-pdb", namespace=ns).status


def evict(api: ApiServer, ns: str, name: str) -> tuple[int, dict[str, Any]]:
    """POST pods/<name>/eviction with the official Python client; (HTTP status, body)."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(api.python_client())
    body = k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name=name, namespace=ns))
    try:
        _, code, _ = core.create_namespaced_pod_eviction_with_http_info(name, ns, body)
        return code, {}
    except k8s.exceptions.ApiException as err:
        import json

        return err.status, json.loads(err.body or "{}")


def test_pdb_status_and_eviction(api: ApiServer, admin: Client) -> None:
    ns = "pdb-test"
    make_namespace(admin, ns)
    for i in (1, 2, 3):
        make_pod(admin, ns, f"web-{i}", f"127.0.21.{i}", ready=True)
    admin.create(
        PodDisruptionBudget.from_dict(
            {
                "metadata": {"name": "web-pdb", "namespace": ns},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
            }
        )
    )
    status = wait_until(
        lambda: (s := pdb_status(admin, ns)) is not None and s.disruptionsAllowed == 1 and s,
        20,
        interval=0.1,
        what="disruptionsAllowed 1",
    )
    assert (status.currentHealthy, status.desiredHealthy, status.expectedPods) == (3, 2, 3)
    assert status.observedGeneration == 1
    (cond,) = status.conditions
    assert (cond.type, cond.status, cond.reason) == ("DisruptionAllowed", "True", "SufficientPods")

    code, _ = evict(api, ns, "web-1")
    assert code == 201
    code, body = evict(api, ns, "web-2")
    assert code == 429, body
    assert body.get("details", {}).get("causes", [{}])[0].get("reason") == "DisruptionBudget"
    # the kubelet confirms web-1's deletion; the budget stays at 0 with two healthy Pods
    if get_or_none(admin, Pod, "web-1", ns) is not None:
        admin.delete(Pod, "web-1", namespace=ns, grace_period=0)
    status = wait_until(
        lambda: (s := pdb_status(admin, ns)).currentHealthy == 2 and s, 20, interval=0.1, what="2 healthy"
    )
    assert status.disruptionsAllowed == 0
    assert next(c for c in status.conditions if c.type == "DisruptionAllowed").reason == "InsufficientPods"
    assert evict(api, ns, "web-2")[0] == 429
    # a replacement becomes Ready: one disruption allowed again
    make_pod(admin, ns, "web-4", "127.0.21.4", ready=True)
    wait_until(lambda: pdb_status(admin, ns).disruptionsAllowed == 1, 20, interval=0.1, what="disruptionsAllowed 1")
    assert evict(api, ns, "web-2")[0] == 201


class FakeKubelet:
    """Confirms deletions of Pods on `node` (grace 0) and starts a Ready replacement on `spare`, like a kubelet plus
    a ReplicaSet controller would."""

    def __init__(self, client: Client, ns: str, node: str, spare: str):
        self.client, self.ns, self.node, self.spare = client, ns, node, spare
        self.stop = threading.Event()
        self.replaced: list[str] = []
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.wait(0.2):
            for pod in self.client.list(Pod, namespace=self.ns):
                if pod.spec.nodeName != self.node or pod.metadata.deletionTimestamp is None:
                    continue
                try:
                    self.client.delete(Pod, pod.metadata.name, namespace=self.ns, grace_period=0)
                except ApiError:
                    continue
                new = f"{pod.metadata.name}-r"
                self.replaced.append(pod.metadata.name)
                make_pod(self.client, self.ns, new, f"127.0.22.{10 + len(self.replaced)}", ready=True, node=self.spare)

    def __enter__(self) -> FakeKubelet:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


@pytest.fixture()
def drain_nodes(admin: Client) -> Iterator[None]:
    for name in ("drain-a", "drain-b"):
        admin.create(Node.from_dict({"metadata": {"name": name}}))
    yield


def test_kubectl_drain_respects_the_budget(api: ApiServer, admin: Client, drain_nodes: None) -> None:
    ns = "drain-test"
    make_namespace(admin, ns)
    for i in (1, 2, 3):
        make_pod(admin, ns, f"web-{i}", f"127.0.22.{i}", ready=True, node="drain-a")
    admin.create(
        PodDisruptionBudget.from_dict(
            {
                "metadata": {"name": "web-pdb", "namespace": ns},
                "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "web"}}},
            }
        )
    )
    wait_until(lambda: pdb_status(admin, ns) and pdb_status(admin, ns).currentHealthy == 3, 20, what="PDB synced")
    # minAvailable 3 of 3: nothing may go until a replacement exists; the fake kubelet adds one per eviction
    make_pod(admin, ns, "web-0", "127.0.22.9", ready=True, node="drain-b")
    with FakeKubelet(admin, ns, "drain-a", "drain-b") as kubelet:
        res = api.kubectl(
            "drain",
            "drain-a",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=90s",
            check=False,
            timeout=120,
        )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "node/drain-a drained" in res.stdout
    assert sorted(kubelet.replaced) == ["web-1", "web-2", "web-3"]
    assert admin.get(Node, "drain-a").spec.unschedulable is True
    assert not [p for p in admin.list(Pod, namespace=ns) if p.spec.nodeName == "drain-a"]


def owned_pod(client: Client, ns: str, name: str, owner: Any, ip: str) -> None:
    ref = {"apiVersion": owner.apiVersion, "kind": owner.kind, "name": owner.metadata.name, "uid": owner.metadata.uid}
    client.create(
        Pod.from_dict(
            {
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "labels": {"app": owner.metadata.name},
                    "ownerReferences": [{**ref, "controller": True}],
                },
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            }
        )
    )
    set_status(client, ns, name, ip, True)


def test_percentages_use_the_controllers_scale(admin: Client) -> None:
    from lightkube.resources.apps_v1 import DaemonSet, ReplicaSet

    ns = "pdb-scale"
    make_namespace(admin, ns)
    template = {"metadata": {"labels": {"app": "rs"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    rs = admin.create(
        ReplicaSet.from_dict(
            {
                "metadata": {"name": "rs", "namespace": ns},
                "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "rs"}}, "template": template},
            }
        )
    )
    for i in (1, 2, 3):
        owned_pod(admin, ns, f"rs-{i}", rs, f"127.0.23.{i}")
    admin.create(
        PodDisruptionBudget.from_dict(
            {
                "metadata": {"name": "rs-pdb", "namespace": ns},
                "spec": {"maxUnavailable": "50%", "selector": {"matchLabels": {"app": "rs"}}},
            }
        )
    )
    status = wait_until(
        lambda: (s := admin.get(PodDisruptionBudget, "rs-pdb", namespace=ns).status) and s.expectedPods == 4 and s,
        20,
        interval=0.1,
        what="expectedPods from the ReplicaSet's replicas",
    )
    assert (status.desiredHealthy, status.currentHealthy, status.disruptionsAllowed) == (2, 3, 1)

    ds_template = {"metadata": {"labels": {"app": "ds"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    ds = admin.create(
        DaemonSet.from_dict(
            {
                "metadata": {"name": "ds", "namespace": ns},
                "spec": {"selector": {"matchLabels": {"app": "ds"}}, "template": ds_template},
            }
        )
    )
    owned_pod(admin, ns, "ds-1", ds, "127.0.23.9")
    admin.create(
        PodDisruptionBudget.from_dict(
            {
                "metadata": {"name": "ds-pdb", "namespace": ns},
                "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "ds"}}},
            }
        )
    )

    def sync_failed() -> Any:
        status = admin.get(PodDisruptionBudget, "ds-pdb", namespace=ns).status
        conds = [c for c in (status.conditions if status else None) or [] if c.reason == "SyncFailed"]
        return conds[0] if conds else None

    cond = wait_until(sync_failed, 20, interval=0.1, what="SyncFailed condition")
    assert (cond.type, cond.status) == ("DisruptionAllowed", "False")
    assert cond.message == "daemonsets.apps does not implement the scale subresource"
