"""The kubelet's Node registration against a real HTTP server: it retries while nothing listens at the API server's
address, and its next try follows the moment the port opens rather than the end of its backoff step."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiohttp import web

from pykubeadm.kubelet import node as node_mod
from pykubeadm.kubelet.api import ClientConfig, KubeClient
from pykubeadm.kubelet.node import NodeAgent
from pykubeadm.testing.apiserver import free_port


async def _serve_nodes(port: int, created: list[dict]) -> web.AppRunner:
    async def post_node(request: web.Request) -> web.Response:
        body = await request.json()
        created.append(body)
        return web.json_response({**body, "metadata": {**body["metadata"], "uid": "uid-1"}}, status=201)

    app = web.Application()
    app.router.add_post("/api/v1/nodes", post_node)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


def test_registration_follows_the_api_server_port_opening_not_the_backoff(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(node_mod, "REGISTER_STEP", 60.0)  # a backoff step far longer than the test may wait

    async def scenario() -> list[dict]:
        port = free_port()
        client = KubeClient(ClientConfig(server=f"http://127.0.0.1:{port}"))
        agent = NodeAgent(client, {"metadata": {"name": "n1", "labels": {}}})
        task = asyncio.ensure_future(agent.register())
        created: list[dict] = []
        runner = None
        try:
            async with asyncio.timeout(20):
                while "Unable to register node n1" not in caplog.text:  # the first try was refused
                    await asyncio.sleep(0.01)
                runner = await _serve_nodes(port, created)
                await agent.registered.wait()
        finally:
            task.cancel()
            await client.close()
            if runner is not None:
                await runner.cleanup()
        assert agent.uid == "uid-1"
        return created

    with caplog.at_level(logging.ERROR, logger="pykubeadm.kubelet.node"):
        created = asyncio.run(scenario())
    assert [n["metadata"]["name"] for n in created] == ["n1"]
    assert "connect" in caplog.text.lower()  # the refused try was logged, as the kubelet does
