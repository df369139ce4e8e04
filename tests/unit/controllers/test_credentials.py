"""The controller-manager's per-ServiceAccount clients (--use-service-account-credentials), against a real TLS server:
each controller presents its own TokenRequest token, and the controllers' clients share one connection pool."""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from lightkube import KubeConfig
from lightkube.config.models import Cluster, User
from lightkube.resources.core_v1 import ConfigMap

from pykubeadm.controllers.app.credentials import ClientBuilder
from pykubeadm.controllers.app.serving import self_signed_pair
from pykubeadm.testing.etcd import free_port


class _Api:
    """ServiceAccounts, their tokens and one ConfigMap; who asked for the ConfigMap, and over which connection."""

    def __init__(self) -> None:
        self.reads: list[tuple[str, int]] = []  # (Authorization, the client's port)

    async def service_account(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        return web.json_response({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})

    async def token(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"name": name},
            "spec": {"audiences": [], "expirationSeconds": 3600},
            "status": {"token": f"token-{name}", "expirationTimestamp": "2030-01-01T00:00:00Z"},
        }
        return web.json_response(body, status=201)

    async def config_map(self, request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.reads.append((request.headers.get("Authorization", ""), peer[1] if peer else 0))
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
        return web.Response(text=json.dumps(body), content_type="application/json")


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[tuple[_Api, KubeConfig]]:
    cert, key = self_signed_pair("127.0.0.1", ["127.0.0.1"], [])
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    ca = cert[cert.index(b"-----END CERTIFICATE-----") + len(b"-----END CERTIFICATE-----\n") :]
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    state = _Api()
    app = web.Application()
    sa = "/api/v1/namespaces/kube-system/serviceaccounts/{name}"
    app.router.add_get(sa, state.service_account)
    app.router.add_post(sa + "/token", state.token)
    app.router.add_get("/api/v1/namespaces/default/configmaps/x", state.config_map)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port("127.0.0.1")
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=server_tls).start()
    cluster = Cluster(server=f"https://127.0.0.1:{port}", certificate_auth_data=base64.b64encode(ca).decode())
    try:
        yield state, KubeConfig.from_one(cluster=cluster, user=User(token="kcm-token"))
    finally:
        await runner.cleanup()


async def _read_as(kubeconfig: KubeConfig, use_service_account_credentials: bool, *controllers: str) -> None:
    """Each controller reads the ConfigMap once, in order, with its client from one ClientBuilder."""
    builder = ClientBuilder(kubeconfig, use_service_account_credentials)
    try:
        for controller in controllers:
            await builder.client_for(controller).get(ConfigMap, "x", namespace="default")
    finally:
        await builder.close()


async def test_each_controller_presents_its_own_token_over_one_shared_connection(
    api: tuple[_Api, KubeConfig],
) -> None:
    state, kubeconfig = api
    await _read_as(kubeconfig, True, "certificate-controller", "bootstrap-signer", "certificate-controller")
    assert [auth for auth, _ in state.reads] == [
        "Bearer token-certificate-controller",
        "Bearer token-bootstrap-signer",
        "Bearer token-certificate-controller",
    ]
    # One TLS connection served all three: the second controller did not open its own (client-go shares one
    # transport among clients whose TLS settings are the same).
    assert len({port for _, port in state.reads}) == 1


async def test_without_service_account_credentials_every_controller_is_the_controller_manager(
    api: tuple[_Api, KubeConfig],
) -> None:
    state, kubeconfig = api
    await _read_as(kubeconfig, False, "bootstrap-signer")
    assert [auth for auth, _ in state.reads] == ["Bearer kcm-token"]
