"""Workload controller pieces against a scripted API (a real lightkube client over httpx's MockTransport).

The replicaset controller with a watch that never delivers (the informer lags forever): a second sync must not create
Pods again while the first sync's creations are unobserved, which is what expectations prevent. The event recorder folds
repeats into one Event's count. (The integration tests run the same code against our real apiserver.)"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from lightkube import AsyncClient, KubeConfig
from lightkube.config.models import Cluster, User
from lightkube.resources.core_v1 import Pod

from pykubeadm.controllers.controllerutil_api import EventRecorder
from pykubeadm.controllers.replicaset.controller import ReplicaSetController
from pykubeadm.controllers.runtime import ControllerContext, cancel_and_wait

RS = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web", "namespace": "ns", "uid": "rs-uid", "resourceVersion": "5", "generation": 1},
    "spec": {
        "replicas": 5,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    },
    "status": {"replicas": 0},
}


class LaggingAPI:
    """Lists one ReplicaSet and no Pods, never sends watch events, accepts every write."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    async def handler(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if request.method == "GET":
            if request.url.params.get("watch") == "true":
                await asyncio.sleep(3600)
            items = [RS] if path.endswith("/replicasets") else []
            if path.endswith("/replicasets/web"):
                return httpx2.Response(200, json=RS)
            return httpx2.Response(200, json={"metadata": {"resourceVersion": "10"}, "items": items})
        body = json.loads(request.content)
        if request.method == "POST" and path.endswith("/pods"):
            body["metadata"]["name"] = body["metadata"]["generateName"] + f"{len(self.created):05d}"
            body["metadata"]["uid"] = f"pod-{len(self.created)}"
            body["metadata"]["namespace"] = path.split("/")[-2]
            self.created.append(body)
            return httpx2.Response(201, json=body)
        return httpx2.Response(200 if request.method == "PUT" else 201, json=body)


@pytest.fixture
async def controller() -> AsyncIterator[tuple[ReplicaSetController, LaggingAPI]]:
    api = LaggingAPI()
    config = KubeConfig.from_one(cluster=Cluster(server="http://fake.invalid"), user=User())
    client = AsyncClient(config, transport=httpx2.MockTransport(api.handler))
    ctx = ControllerContext(client=client)
    ctl = ReplicaSetController(ctx)
    tasks = [asyncio.create_task(inf.run()) for inf in ctx.informers]
    try:
        await asyncio.wait_for(ctl.wait_synced(), 5)
        yield ctl, api
    finally:
        await cancel_and_wait(tasks)


async def test_second_sync_waits_for_the_first_syncs_pods(controller: tuple[ReplicaSetController, LaggingAPI]) -> None:
    ctl, api = controller
    await ctl.sync("ns/web")
    assert len(api.created) == 5
    assert [p["metadata"]["generateName"] for p in api.created] == ["web-"] * 5
    ref = api.created[0]["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == (
        "ReplicaSet",
        "rs-uid",
        True,
        True,
    )
    await ctl.sync("ns/web")  # the informer still shows no Pods: without expectations this would create 5 more
    assert len(api.created) == 5
    for body in api.created:  # the watch finally shows them
        ctl._on_pod("ADDED", Pod.from_dict(body), None)
    assert ctl.expectations.satisfied("ns/web")


async def test_event_recorder_counts_repeats() -> None:
    """Identical events fold into one Event whose count rises (client-go's correlator); others are new Events."""
    writes: list[tuple[str, str, dict[str, Any]]] = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        writes.append((request.method, request.url.path, body))
        event = {"metadata": {"name": "x"}, "involvedObject": {}, **body}
        return httpx2.Response(201 if request.method == "POST" else 200, json=event)

    config = KubeConfig.from_one(cluster=Cluster(server="http://fake.invalid"), user=User())
    recorder = EventRecorder(AsyncClient(config, transport=httpx2.MockTransport(handler)), "replicaset-controller")
    rs = {"metadata": {"name": "web", "namespace": "ns", "uid": "u"}}
    for _ in range(3):
        recorder.event(rs, "Warning", "FailedCreate", "Error creating: nope", kind="ReplicaSet", api_version="apps/v1")
    recorder.event(rs, "Normal", "SuccessfulCreate", "Created pod: web-abcde", kind="ReplicaSet", api_version="apps/v1")
    await asyncio.gather(*recorder._tasks)
    assert [(m, p.rsplit("/", 1)[-1] if m == "PATCH" else p) for m, p, _ in writes][:1] == [
        ("POST", "/api/v1/namespaces/ns/events")
    ]
    first = writes[0][2]
    assert first["involvedObject"] == {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web",
        "namespace": "ns",
        "uid": "u",
    }
    assert (first["source"], first["count"], first["type"]) == ({"component": "replicaset-controller"}, 1, "Warning")
    assert [(m, b.get("count")) for m, _, b in writes[1:3]] == [("PATCH", 2), ("PATCH", 3)]
    assert writes[1][1] == f"/api/v1/namespaces/ns/events/{first['metadata']['name']}"
    assert writes[3][0] == "POST" and writes[3][2]["reason"] == "SuccessfulCreate"
