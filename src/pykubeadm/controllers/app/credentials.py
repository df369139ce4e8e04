"""Per-controller API credentials for `--use-service-account-credentials` (client-go's DynamicControllerClientBuilder).

Each controller writes as its own ServiceAccount in kube-system (`certificate-controller`, `bootstrap-signer`, …) so the
API server's `system:controller:*` roles authorise it. A token is requested through the TokenRequest API
(`serviceaccounts/<name>/token`, one hour) with the controller-manager's own credentials, cached, and refreshed at 80 %
of its lifetime or after a 401. Informers keep using the controller-manager's own client (it may list/watch everything).

The controllers' clients differ only in their bearer token, so they share one connection pool (as client-go's
transport cache shares one transport among configs with the same TLS settings): a controller's request reuses a
connection another opened, instead of a TLS handshake per controller.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator
from pathlib import Path

import httpx2
from lightkube import AsyncClient, KubeConfig
from lightkube.config.models import User
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ServiceAccount, ServiceAccountToken

from pykubeadm import constants as c
from pykubeadm.client import ApiError, async_client, async_transport, is_already_exists, is_not_found, load_kubeconfig

__all__ = ["ClientBuilder", "ServiceAccountTokenAuth"]

log = logging.getLogger(__name__)

#: Lifetime requested for controller tokens.
TOKEN_EXPIRATION_SECONDS = 3600


class ServiceAccountTokenAuth(httpx2.Auth):
    """httpx auth that presents a TokenRequest token of kube-system/<name>, fetched with the root client."""

    def __init__(self, root: AsyncClient, name: str, namespace: str = c.NAMESPACE_SYSTEM):
        self.root = root
        self.name = name
        self.namespace = namespace
        self._token: str | None = None
        self._refresh_at = 0.0
        self._lock = asyncio.Lock()

    async def _ensure_service_account(self) -> None:
        try:
            await self.root.get(ServiceAccount, self.name, namespace=self.namespace)
        except ApiError as err:
            if not is_not_found(err):
                raise
            try:
                await self.root.create(ServiceAccount(metadata=ObjectMeta(name=self.name, namespace=self.namespace)))
            except ApiError as err2:
                if not is_already_exists(err2):
                    raise

    async def token(self, force: bool = False) -> str:
        async with self._lock:
            if self._token is None or force or time.monotonic() >= self._refresh_at:
                await self._ensure_service_account()
                request = ServiceAccountToken(
                    metadata=ObjectMeta(),
                    spec=TokenRequestSpec(audiences=[], expirationSeconds=TOKEN_EXPIRATION_SECONDS),
                )
                result = await self.root.create(request, self.name, namespace=self.namespace)
                if result.status is None or not result.status.token:
                    raise RuntimeError(f"TokenRequest for {self.namespace}/{self.name} returned no token")
                self._token = result.status.token
                seconds = TOKEN_EXPIRATION_SECONDS
                self._refresh_at = time.monotonic() + 0.8 * seconds
                log.info("obtained a token for service account %s/%s", self.namespace, self.name)
            return self._token

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        request.headers["Authorization"] = f"Bearer {await self.token()}"
        response = yield request
        if response.status_code == 401:
            request.headers["Authorization"] = f"Bearer {await self.token(force=True)}"
            yield request


class ClientBuilder:
    """Hands out API clients: the root (controller-manager) client, and one per controller ServiceAccount."""

    def __init__(self, kubeconfig: str | Path | KubeConfig, use_service_account_credentials: bool):
        self.kubeconfig = kubeconfig if isinstance(kubeconfig, KubeConfig) else load_kubeconfig(kubeconfig)
        self.use_sa = use_service_account_credentials
        self.root = async_client(self.kubeconfig)
        self._clients: dict[str, AsyncClient] = {}
        self._transport: httpx2.AsyncBaseTransport | None = None  # the controllers' clients' shared pool

    def client_for(self, service_account: str) -> AsyncClient:
        if not self.use_sa:
            return self.root
        if service_account not in self._clients:
            # same server and CA, but no client certificate: x509 would win over the bearer token
            single = self.kubeconfig.get()
            assert single is not None  # without a default, get() raises ConfigError instead of returning None
            anonymous = KubeConfig.from_one(cluster=single.cluster, user=User(), fname=single.fname)
            if self._transport is None:
                self._transport = async_transport(anonymous)
            client = async_client(anonymous, transport=self._transport)
            inner = client._client._client  # lightkube's httpx client
            inner.auth = ServiceAccountTokenAuth(self.root, service_account)
            self._clients[service_account] = client
        return self._clients[service_account]

    async def probe(self, service_account: str) -> bool:
        """Check that TokenRequest works; without it (a 404 from the API server) fall back to the root credentials.

        kube-controller-manager would keep retrying; falling back keeps a cluster whose API server lacks token
        signing usable, and is logged loudly.
        """
        if not self.use_sa:
            return True
        auth = self.client_for(service_account)._client._client.auth
        assert isinstance(auth, ServiceAccountTokenAuth)
        while True:
            try:
                await auth.token()
                return True
            except ApiError as err:
                if is_not_found(err):
                    log.warning(
                        "TokenRequest is not available (%s); --use-service-account-credentials falls back to the "
                        "controller-manager's own credentials",
                        err,
                    )
                    self.use_sa = False
                    return False
                log.warning("cannot get a token for service account %s: %s; retrying", service_account, err)
            except httpx2.HTTPError as err:
                log.warning("cannot get a token for service account %s: %s; retrying", service_account, err)
            await asyncio.sleep(2.0)

    async def close(self) -> None:
        for client in [self.root, *self._clients.values()]:  # the first controller client closes the shared pool
            try:
                await client.close()
            except Exception as err:
                log.debug("closing client: %s", err)
