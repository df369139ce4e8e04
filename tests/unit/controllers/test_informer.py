"""client.Informer: list + watch, resume from the last resourceVersion, a fresh list (with a diff) on 410 Gone."""

from __future__ import annotations

import asyncio
import json

import httpx2
from lightkube import AsyncClient, KubeConfig
from lightkube.config.models import Cluster, User
from lightkube.resources.core_v1 import ConfigMap

from pykubeadm.client import Informer


def cm(name: str, rv: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
    }


class FakeAPI:
    """Scripted API: successive lists and watches; records the resourceVersion each watch asked for."""

    def __init__(self) -> None:
        self.lists = [
            {"metadata": {"resourceVersion": "10"}, "items": [cm("a", "5"), cm("b", "6")]},
            {"metadata": {"resourceVersion": "30"}, "items": [cm("b", "25"), cm("c", "28")]},
        ]
        self.watches = [
            # first watch: one change, then the server closes the stream normally
            [{"type": "MODIFIED", "object": cm("b", "11")}],
            # resumed watch: the history is gone
            [
                {
                    "type": "ERROR",
                    "object": {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "status": "Failure",
                        "code": 410,
                        "reason": "Expired",
                        "message": "too old resource version",
                    },
                }
            ],
        ]
        self.watch_rvs: list[str | None] = []
        self.idle = asyncio.Event()

    async def handler(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.params.get("watch") == "true":
            self.watch_rvs.append(request.url.params.get("resourceVersion"))
            if not self.watches:
                self.idle.set()
                await asyncio.sleep(3600)
            lines = "".join(json.dumps(e) + "\n" for e in self.watches.pop(0))
            return httpx2.Response(200, content=lines.encode(), headers={"Content-Type": "application/json"})
        return httpx2.Response(200, json=self.lists.pop(0))


async def test_informer_resumes_and_relists_on_410() -> None:
    fake = FakeAPI()
    config = KubeConfig.from_one(cluster=Cluster(server="http://fake.invalid"), user=User())
    client = AsyncClient(config, transport=httpx2.MockTransport(fake.handler))
    informer = Informer(client, ConfigMap, namespace="ns", backoff=0.01)
    events: list[tuple[str, str, str]] = []
    informer.add_handler(lambda ev, obj, old: events.append((ev, obj.metadata.name, obj.metadata.resourceVersion)))
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(fake.idle.wait(), 5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert events == [
        ("ADDED", "a", "5"),
        ("ADDED", "b", "6"),  # first list
        ("MODIFIED", "b", "11"),  # watch
        ("MODIFIED", "b", "25"),
        ("ADDED", "c", "28"),  # relist after 410 ...
        ("DELETED", "a", "5"),  # ... reports what vanished meanwhile
    ]
    assert fake.watch_rvs == ["10", "11", "30"]  # resume from the last event, then from the new list
    assert sorted(informer.cache) == ["ns/b", "ns/c"]
    assert informer.synced.is_set()


async def test_informer_survives_an_object_that_does_not_decode() -> None:
    """One malformed object in a watch must not end the informer (nor the controller-manager running it): it lists
    again and goes on delivering."""
    fake = FakeAPI()
    fake.lists = [
        {"metadata": {"resourceVersion": "10"}, "items": [cm("a", "5")]},
        {"metadata": {"resourceVersion": "20"}, "items": [cm("a", "5"), cm("d", "19")]},
    ]
    fake.watches = [[{"type": "ADDED", "object": {**cm("bad", "15"), "metadata": "not an object"}}]]
    config = KubeConfig.from_one(cluster=Cluster(server="http://fake.invalid"), user=User())
    client = AsyncClient(config, transport=httpx2.MockTransport(fake.handler))
    informer = Informer(client, ConfigMap, namespace="ns", backoff=0.01)
    events: list[tuple[str, str]] = []
    informer.add_handler(lambda ev, obj, old: events.append((ev, obj.metadata.name)))
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(fake.idle.wait(), 5)
    assert not task.done()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert events == [("ADDED", "a"), ("ADDED", "d")]
    assert fake.watch_rvs == ["10", "20"]
