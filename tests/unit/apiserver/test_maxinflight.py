"""--max-requests-inflight / --max-mutating-requests-inflight as kube-apiserver applies them (429, `Retry-After: 1`,
kube's plain-text message; long-running requests and system:masters exempt) and the per-client limit on anonymous
requests. A small in-process app: the real request-info and max-in-flight middlewares, users picked by a header,
handlers that hold their slot until released."""

import asyncio

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from pykubeadm.apiserver.authn.user import UserInfo
from pykubeadm.apiserver.handlers.context import USER_KEY
from pykubeadm.apiserver.middleware import InflightLimits, max_in_flight_middleware
from pykubeadm.apiserver.middleware.requestinfo import request_info_middleware
from pykubeadm.apiserver.options import options_from_flags

USERS = {
    "alice": UserInfo("alice", groups=("system:authenticated",)),
    "root": UserInfo("root", groups=("system:masters", "system:authenticated")),
    "anon": UserInfo("system:anonymous", groups=("system:unauthenticated",)),
}
CM = "/api/v1/namespaces/default/configmaps"


class Holder:
    """Handlers that stay in flight until `release`; `inside` counts them."""

    def __init__(self) -> None:
        self.inside = 0
        self.release = asyncio.Event()
        self.changed = asyncio.Condition()

    async def handle(self, request: web.Request) -> web.Response:
        async with self.changed:
            self.inside += 1
            self.changed.notify_all()
        try:
            await self.release.wait()
        finally:
            self.inside -= 1
        return web.Response(text="done")

    async def wait_inside(self, n: int) -> None:
        async def reached() -> None:
            async with self.changed:
                await self.changed.wait_for(lambda: self.inside >= n)

        await asyncio.wait_for(reached(), 10)


@web.middleware
async def _user_from_header(request: web.Request, handler):
    request[USER_KEY] = USERS[request.headers.get("X-User", "alice")]
    return await handler(request)


@pytest.fixture
async def limited():
    holder = Holder()
    app = web.Application(
        middlewares=[
            request_info_middleware(),
            _user_from_header,
            max_in_flight_middleware(InflightLimits(non_mutating=3, mutating=2, anonymous_per_client=2)),
        ]
    )
    app.router.add_route("*", "/{tail:.*}", holder.handle)
    client = TestClient(TestServer(app))
    await client.start_server()
    yield client, holder
    holder.release.set()
    await client.close()


def _start(client: TestClient, method: str, path: str, user: str = "alice") -> asyncio.Task:
    async def go():
        async with client.request(method, path, headers={"X-User": user}) as r:
            return r.status, await r.text(), dict(r.headers)

    return asyncio.create_task(go())


async def test_reads_beyond_the_limit_get_429_with_retry_after(limited):
    client, holder = limited
    held = [_start(client, "GET", CM) for _ in range(3)]
    await holder.wait_inside(3)
    status, text, headers = await _start(client, "GET", f"{CM}/x")
    assert status == 429
    assert text == "Too many requests, please try again later.\n"
    assert headers["Retry-After"] == "1" and headers["Content-Type"].startswith("text/plain")
    # writes have their own budget; system:masters is never refused; watches and exec are not counted
    writes = [_start(client, "POST", CM) for _ in range(2)]
    await holder.wait_inside(5)
    assert (await _start(client, "PUT", f"{CM}/x"))[0] == 429
    masters = _start(client, "GET", CM, "root")
    watch = _start(client, "GET", f"{CM}?watch=true")
    exec_ = _start(client, "POST", "/api/v1/namespaces/default/pods/p/exec?command=ls")
    logs = _start(client, "GET", "/api/v1/namespaces/default/pods/p/log")
    await holder.wait_inside(9)
    holder.release.set()
    results = await asyncio.gather(*held, *writes, masters, watch, exec_, logs)
    assert [r[0] for r in results] == [200] * 9
    assert (await _start(client, "GET", CM))[0] == 200  # slots are given back


async def test_anonymous_requests_are_limited_per_client(limited):
    client, holder = limited
    held = [_start(client, "GET", "/api/v1/namespaces/kube-public/configmaps/cluster-info", "anon") for _ in range(2)]
    await holder.wait_inside(2)
    status, text, _ = await _start(client, "GET", "/api/v1/namespaces/kube-public/configmaps/cluster-info", "anon")
    assert (status, text) == (429, "Too many requests, please try again later.\n")
    # an authenticated client (a joining node's bootstrap token) still gets its slot
    joiner = _start(client, "GET", CM, "alice")
    await holder.wait_inside(3)
    holder.release.set()
    assert [r[0] for r in await asyncio.gather(*held, joiner)] == [200, 200, 200]


def test_flags_default_to_kubes_and_refuse_negative_values(tmp_path):
    o = options_from_flags({}, tmp_path)
    assert (o.max_requests_inflight, o.max_mutating_requests_inflight) == (400, 200)
    o = options_from_flags({"max_requests_inflight": 0, "max_mutating_requests_inflight": 50}, tmp_path)
    assert (o.max_requests_inflight, o.max_mutating_requests_inflight) == (0, 50)
    with pytest.raises(Exception, match="--max-requests-inflight can not be negative value"):
        options_from_flags({"max_requests_inflight": -1}, tmp_path)


async def test_zero_means_unlimited():
    holder = Holder()
    app = web.Application(
        middlewares=[
            request_info_middleware(),
            _user_from_header,
            max_in_flight_middleware(InflightLimits(non_mutating=0, mutating=0)),
        ]
    )
    app.router.add_route("*", "/{tail:.*}", holder.handle)
    async with TestClient(TestServer(app)) as client:
        held = [_start(client, "GET", CM) for _ in range(20)]
        await holder.wait_inside(20)
        holder.release.set()
        assert {r[0] for r in await asyncio.gather(*held)} == {200}


async def test_anonymous_requests_are_rate_limited_per_client():
    holder = Holder()
    holder.release.set()
    app = web.Application(
        middlewares=[
            request_info_middleware(),
            _user_from_header,
            max_in_flight_middleware(InflightLimits(anonymous_per_client=50, anonymous_qps_per_client=5)),
        ]
    )
    app.router.add_route("*", "/{tail:.*}", holder.handle)
    async with TestClient(TestServer(app)) as client:
        statuses = [(await _start(client, "GET", "/version", "anon"))[0] for _ in range(30)]
        # the bucket holds a burst of 2 × 5; the refill during the loop is a few tokens at most on a slow machine
        assert statuses[:10] == [200] * 10 and statuses.count(429) >= 10
        assert (await _start(client, "GET", "/version", "alice"))[0] == 200  # authenticated users are not in it
