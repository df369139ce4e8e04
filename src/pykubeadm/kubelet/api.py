"""The kubelet's thin async REST client (aiohttp, JSON dicts): requests, watches, and credentials that can be swapped.

The kubelet talks to the API only through this module: the TLS bootstrap and certificate manager (CSRs), node status
and Lease heartbeats, mirror Pods and SubjectAccessReviews. The metrics server, which must stay small, uses it too. `KubeClient` is one set of credentials; `SwappableClient`
is what the long-running loops hold, so a rotated client certificate takes effect for the next request while requests
in flight finish on the old connection (no gap). Objects are plain dicts as the API serves them.

aiohttp, which the kubelet already serves with, rather than httpx: its first request costs no lazy imports (httpx's
goes through httpcore and anyio, ~50 ms of CPU on the critical path of a join's TLS bootstrap) and each request less.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from pykubeadm.util.tlscontext import insecure_client_context

__all__ = ["ApiError", "ClientConfig", "KubeClient", "SwappableClient", "is_refused", "is_transient", "wait_listening"]

log = logging.getLogger(__name__)


class ApiError(Exception):
    """A non-2xx answer; `status`, `reason` and `message` come from the server's Status object when there is one."""

    def __init__(self, status: int, reason: str, message: str, body: dict[str, Any] | None = None):
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}


def is_transient(e: BaseException) -> bool:
    """Worth retrying: the server is unreachable, restarting, or overloaded."""
    if isinstance(e, ApiError):
        return e.status >= 500 or e.status == 429
    return isinstance(e, aiohttp.ClientError | OSError | asyncio.TimeoutError)


def is_refused(e: BaseException) -> bool:
    """The connection was refused: nothing listens at the server's address (yet)."""
    if isinstance(e, aiohttp.ClientConnectorError):
        return isinstance(e.os_error, ConnectionRefusedError)
    return isinstance(e, ConnectionRefusedError)


async def wait_listening(server: str, timeout: float, interval: float = 0.05) -> bool:
    """Wait up to `timeout` seconds for the server's port to accept a TCP connection, trying every `interval` (a
    refused connect costs neither side anything); whether it did."""
    parts = urlsplit(server)
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), max(interval, 1.0))
        except (TimeoutError, OSError):
            left = deadline - loop.time()
            if left <= 0:
                return False
            await asyncio.sleep(min(interval, left))
            continue
        writer.close()
        return True


@dataclass(frozen=True)
class ClientConfig:
    """Where the API is and how to authenticate: what a kubeconfig context resolves to."""

    server: str
    ca_pem: bytes | None = None
    insecure: bool = False
    token: str | None = field(default=None, repr=False)
    #: A file holding the bearer token, read again for every request (a Pod's rotated service-account token).
    token_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    cert_pem: bytes | None = field(default=None, repr=False)
    key_pem: bytes | None = field(default=None, repr=False)

    def bearer_token(self) -> str | None:
        """The token to send now: the token file's current content, else `token`."""
        if self.token_file:
            try:
                return Path(self.token_file).read_text().strip() or self.token
            except OSError:
                pass
        return self.token

    def with_client_cert(self, cert_file: str, key_file: str) -> ClientConfig:
        return replace(
            self, token=None, token_file=None, cert_file=cert_file, key_file=key_file, cert_pem=None, key_pem=None
        )

    def ssl_context(self) -> ssl.SSLContext:
        if self.insecure:
            ctx = insecure_client_context()
        elif self.ca_pem:
            ctx = ssl.create_default_context(cadata=self.ca_pem.decode())
        else:
            ctx = ssl.create_default_context()
        if self.cert_file:
            ctx.load_cert_chain(self.cert_file, self.key_file or self.cert_file)
        elif self.cert_pem and self.key_pem:
            _load_chain_from_memory(ctx, self.cert_pem, self.key_pem)
        return ctx


def _load_chain_from_memory(ctx: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """ssl can only load a chain from a file: use a private temp file that is removed right away."""
    fd, path = tempfile.mkstemp(prefix="kubelet-cred-", suffix=".pem")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(cert_pem + b"\n" + key_pem)
        ctx.load_cert_chain(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _error(status: int, reason: str, content: bytes) -> ApiError:
    body: dict[str, Any] = {}
    try:
        parsed = json.loads(content)
        if isinstance(parsed, dict):
            body = parsed
    except ValueError:
        pass
    if body.get("kind") == "Status":
        return ApiError(status, body.get("reason", ""), body.get("message", ""), body)
    return ApiError(status, reason, content[:200].decode(errors="replace"), body)


def _query(params: Mapping[str, Any] | None) -> dict[str, str] | None:
    """Query parameters as strings, booleans as Go writes them ("true"), None left out."""
    if not params:
        return None
    return {
        k: ("true" if v else "false") if isinstance(v, bool) else str(v) for k, v in params.items() if v is not None
    }


def _host(server: str) -> str:
    """The server's host[:port] as rest_client_requests_total labels it (no port when it is the scheme's default)."""
    parts = urlsplit(server)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    default = 443 if parts.scheme == "https" else 80
    return host if parts.port in (None, default) else f"{host}:{parts.port}"


#: on_response(method, host, status) sees every response as its headers arrive.
ResponseHook = Callable[[str, str, int], Awaitable[None]]


class KubeClient:
    """One authenticated connection pool to the API server (opened on the first request)."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        timeout: float = 30.0,
        user_agent: str = "kubelet/pykubeadm",
        on_response: ResponseHook | None = None,
    ):
        """`on_response` sees every response as its headers arrive (the kubelet's rest_client_requests_total)."""
        self.config = config
        self._base = config.server.rstrip("/")
        self._host = _host(config.server)
        self._ssl = config.ssl_context() if self._base.startswith("https:") else None
        self._headers = {"User-Agent": user_agent, "Accept": "application/json"}
        if config.token:
            self._headers["Authorization"] = f"Bearer {config.token}"
        self._timeout = timeout
        self._on_response = on_response
        self._http: aiohttp.ClientSession | None = None

    def _request_headers(self, accept: str | None) -> dict[str, str]:
        """Per-request headers: the token file's current token, the Accept asked for."""
        headers: dict[str, str] = {"Accept": accept} if accept else {}
        if self.config.token_file:
            token = self.config.bearer_token()
            if token:
                headers["Authorization"] = f"Bearer {token}"
        return headers

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None:
            self._http = aiohttp.ClientSession(
                headers=self._headers,
                connector=aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else True, limit=20),
                timeout=self._timeouts(self._timeout),
            )
        return self._http

    @staticmethod
    def _timeouts(seconds: float) -> aiohttp.ClientTimeout:
        """`seconds` for connecting (at most 10) and between two reads; no limit on the whole request."""
        return aiohttp.ClientTimeout(total=None, sock_connect=min(seconds, 10.0), sock_read=seconds)

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()

    async def _seen(self, method: str, status: int) -> None:
        if self._on_response is not None:
            await self._on_response(method, self._host, status)

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        accept: str | None = None,
    ) -> dict[str, Any]:
        """`accept` replaces application/json (e.g. a PartialObjectMetadataList)."""
        headers = self._request_headers(accept)
        kwargs: dict[str, Any] = {"params": _query(params), "allow_redirects": False, "headers": headers}
        if body is not None:
            kwargs["data"] = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        if timeout is not None:
            kwargs["timeout"] = self._timeouts(timeout)
        async with self._session().request(method, self._base + path, **kwargs) as resp:
            await self._seen(method, resp.status)
            content = await resp.read()
            if resp.status >= 400:
                raise _error(resp.status, resp.reason or "", content)
        if not content:
            return {}
        data = json.loads(content)
        return data if isinstance(data, dict) else {"items": data}

    async def get(self, path: str, params: dict[str, Any] | None = None, accept: str | None = None) -> dict[str, Any]:
        return await self.request("GET", path, params=params, accept=accept)

    async def post(self, path: str, body: Any) -> dict[str, Any]:
        return await self.request("POST", path, body=body)

    async def put(self, path: str, body: Any) -> dict[str, Any]:
        return await self.request("PUT", path, body=body)

    async def patch(self, path: str, body: Any, patch_type: str = "strategic") -> dict[str, Any]:
        ctype = {
            "strategic": "application/strategic-merge-patch+json",
            "merge": "application/merge-patch+json",
            "json": "application/json-patch+json",
        }[patch_type]
        return await self.request("PATCH", path, body=body, content_type=ctype)

    async def delete(self, path: str, body: Any = None) -> dict[str, Any]:
        return await self.request("DELETE", path, body=body)

    async def watch(
        self,
        path: str,
        *,
        resource_version: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = 290,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Yield (type, object) events until the server ends the watch; an ERROR event carries a Status object."""
        params: dict[str, Any] = {
            "watch": "true",
            "timeoutSeconds": str(timeout_seconds),
            "allowWatchBookmarks": "true",
        }
        if resource_version:
            params["resourceVersion"] = resource_version
        if field_selector:
            params["fieldSelector"] = field_selector
        if label_selector:
            params["labelSelector"] = label_selector
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10.0, sock_read=timeout_seconds + 30.0)
        headers = self._request_headers(None)
        async with self._session().get(self._base + path, params=params, timeout=timeout, headers=headers) as resp:
            await self._seen("GET", resp.status)
            if resp.status >= 400:
                raise _error(resp.status, resp.reason or "", await resp.read())
            buf = b""
            async for chunk in resp.content.iter_any():  # one event per line, however long
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        event = json.loads(line)
                        yield event.get("type", ""), event.get("object") or {}
            if buf.strip():
                event = json.loads(buf)
                yield event.get("type", ""), event.get("object") or {}


class SwappableClient:
    """A KubeClient whose credentials can be replaced while in use; the old pool is closed after a grace period."""

    def __init__(self, client: KubeClient, *, grace: float = 60.0):
        self._client = client
        self._grace = grace
        self._retired: set[asyncio.Task[None]] = set()

    @property
    def current(self) -> KubeClient:
        return self._client

    def swap(self, client: KubeClient) -> None:
        old, self._client = self._client, client
        task = asyncio.get_running_loop().create_task(self._close_later(old))
        self._retired.add(task)
        task.add_done_callback(self._retired.discard)

    async def _close_later(self, client: KubeClient) -> None:
        await asyncio.sleep(self._grace)
        await client.close()

    async def close(self) -> None:
        for t in list(self._retired):
            t.cancel()
        await self._client.close()

    # delegate the request methods
    async def request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        return await self._client.request(method, path, **kw)

    async def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self._client.get(path, params)

    async def post(self, path: str, body: Any) -> dict[str, Any]:
        return await self._client.post(path, body)

    async def put(self, path: str, body: Any) -> dict[str, Any]:
        return await self._client.put(path, body)

    async def patch(self, path: str, body: Any, patch_type: str = "strategic") -> dict[str, Any]:
        return await self._client.patch(path, body, patch_type)

    async def delete(self, path: str, body: Any = None) -> dict[str, Any]:
        return await self._client.delete(path, body)

    def watch(self, path: str, **kw: Any) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        return self._client.watch(path, **kw)
