"""client.wait_for / wait_for_sync against a scripted API: the watch between GETs, and the fallback to polling when
the watch is refused, breaks or ends early (a real lightkube client over httpx's MockTransport)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest
from lightkube import ApiError, AsyncClient, Client, KubeConfig
from lightkube.config.models import Cluster, User
from lightkube.resources.core_v1 import ConfigMap

from pykubeadm.client import _WATCH_ATTEMPTS, wait_for, wait_for_sync

CONFIG = KubeConfig.from_one(cluster=Cluster(server="http://fake.invalid"), user=User())
JSON = {"Content-Type": "application/json"}


def cm(rv: str, data: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns", "resourceVersion": rv},
        "data": data or {},
    }


def status(code: int, reason: str) -> httpx2.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": reason,
    }
    return httpx2.Response(code, json=body)


def events(*evs: tuple[str, dict[str, Any]]) -> bytes:
    return b"".join(json.dumps({"type": t, "object": o}).encode() + b"\n" for t, o in evs)


class Stream(httpx2.SyncByteStream):
    """A watch body that records whether it was closed and how far it was read."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.sent = 0
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            self.sent += 1
            yield chunk

    def close(self) -> None:
        self.closed = True


class FakeAPI:
    """GETs answer `gets` in turn (the last one repeated), watches `watch()`; records both."""

    def __init__(self, gets: list[httpx2.Response], watch: Callable[[httpx2.Request], httpx2.Response]) -> None:
        self.gets = gets
        self.watch = watch
        self.get_count = 0
        self.watches: list[httpx2.Request] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.params.get("watch") == "true":
            self.watches.append(request)
            return self.watch(request)
        self.get_count += 1
        return self.gets[min(self.get_count, len(self.gets)) - 1]

    def client(self) -> Client:
        return Client(CONFIG, transport=httpx2.MockTransport(self.handler))


def not_found() -> httpx2.Response:
    return status(404, "NotFound")


def test_watch_event_satisfying_the_predicate_is_the_result_and_the_stream_is_closed() -> None:
    stream = Stream([events(("ADDED", cm("1"))), events(("MODIFIED", cm("2", {"k": "v"}))), b"never read\n"])
    api = FakeAPI([not_found()], lambda _r: httpx2.Response(200, stream=stream, headers=JSON))
    got = wait_for_sync(api.client(), ConfigMap, "c", lambda o: o.data == {"k": "v"}, namespace="ns", timeout=7.5)
    assert got.metadata.resourceVersion == "2"
    assert api.get_count == 1
    assert stream.closed and stream.sent == 2
    (req,) = api.watches
    assert req.url.path == "/api/v1/namespaces/ns/configmaps"
    assert req.url.params.get("fieldSelector") == "metadata.name=c"
    assert req.url.params.get("timeoutSeconds") == "8"  # the time left, rounded up
    assert "resourceVersion" not in req.url.params


@pytest.mark.parametrize(
    "watch",
    [
        lambda _r: status(403, "Forbidden"),
        lambda _r: status(405, "MethodNotAllowed"),
        lambda _r: httpx2.Response(405, text="no"),  # not a Status
        lambda _r: httpx2.Response(200, content=events(("ERROR", {"kind": "Status", "code": 500})), headers=JSON),
        lambda _r: httpx2.Response(200, content=b"<html>\n", headers=JSON),  # not watch events
    ],
)
def test_refused_watch_is_not_tried_again_and_the_wait_polls(
    watch: Callable[[httpx2.Request], httpx2.Response],
) -> None:
    api = FakeAPI([not_found()] * 4 + [httpx2.Response(200, json=cm("9"))], watch)
    got = wait_for_sync(api.client(), ConfigMap, "c", lambda o: True, namespace="ns", timeout=10, interval=0.01)
    assert got.metadata.resourceVersion == "9"
    assert api.get_count == 5
    assert len(api.watches) == 1


def test_watch_that_ends_early_or_breaks_is_tried_a_few_times_then_the_wait_polls() -> None:
    def watch(request: httpx2.Request) -> httpx2.Response:
        if len(api.watches) == 1:
            raise httpx2.ConnectError("refused", request=request)
        return httpx2.Response(200, content=b"", headers=JSON)  # ends at once

    api = FakeAPI([not_found()] * (_WATCH_ATTEMPTS + 3) + [httpx2.Response(200, json=cm("9"))], watch)
    got = wait_for_sync(api.client(), ConfigMap, "c", lambda o: True, namespace="ns", timeout=10, interval=0.01)
    assert got.metadata.resourceVersion == "9"
    assert len(api.watches) == _WATCH_ATTEMPTS


def test_no_watch_after_a_get_that_did_not_get_through() -> None:
    calls: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        calls.append("watch" if request.url.params.get("watch") == "true" else "get")
        if len(calls) == 1:
            raise httpx2.ConnectError("refused", request=request)
        return httpx2.Response(200, json=cm("3"))

    client = Client(CONFIG, transport=httpx2.MockTransport(handler))
    assert wait_for_sync(client, ConfigMap, "c", lambda o: True, namespace="ns", timeout=10, interval=0.01)
    assert calls == ["get", "get"]


def test_predicate_error_in_a_watch_event_propagates_and_closes_the_stream() -> None:
    stream = Stream([events(("ADDED", cm("1"))), b"never read\n"])
    api = FakeAPI([not_found()], lambda _r: httpx2.Response(200, stream=stream, headers=JSON))

    def predicate(_obj: ConfigMap) -> bool:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        wait_for_sync(api.client(), ConfigMap, "c", predicate, namespace="ns", timeout=10)
    assert stream.closed


def test_other_get_errors_still_raise() -> None:
    api = FakeAPI([status(403, "Forbidden")], lambda _r: status(403, "Forbidden"))
    with pytest.raises(ApiError, match="Forbidden"):
        wait_for_sync(api.client(), ConfigMap, "c", lambda o: True, namespace="ns", timeout=10)
    assert api.watches == []


async def test_async_watch_is_bounded_by_the_deadline_and_times_out_like_polling() -> None:
    watches: list[httpx2.Request] = []
    hung = asyncio.Event()

    async def handler(request: httpx2.Request) -> httpx2.Response:
        if request.url.params.get("watch") == "true":
            watches.append(request)
            hung.set()
            await asyncio.sleep(3600)  # a server that never answers (or never ends the stream)
        return not_found()

    client = AsyncClient(CONFIG, transport=httpx2.MockTransport(handler))
    try:
        start = time.monotonic()
        with pytest.raises(TimeoutError, match=r"timed out waiting for ConfigMap c: NotFound"):
            await wait_for(client, ConfigMap, "c", lambda o: True, namespace="ns", timeout=0.5, interval=30)
        assert time.monotonic() - start < 0.5 + 1.0  # the deadline, not the 30 s interval nor the watch
        assert hung.is_set() and len(watches) == 1
    finally:
        await client.close()


async def test_async_watch_event_is_the_result() -> None:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        if request.url.params.get("watch") == "true":
            body = events(("ADDED", cm("1")), ("MODIFIED", cm("2", {"k": "v"})))
            return httpx2.Response(200, content=body, headers=JSON)
        return not_found()

    client = AsyncClient(CONFIG, transport=httpx2.MockTransport(handler))
    try:
        got = await wait_for(client, ConfigMap, "c", lambda o: o.data == {"k": "v"}, namespace="ns", timeout=10)
        assert got.metadata.resourceVersion == "2"
    finally:
        await client.close()
