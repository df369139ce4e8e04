"""An in-memory stand-in for the kubelet's client (GET of objects, POST of TokenRequests) for unit tests; the
integration tests in tests/integration/kubelet/test_pod_env.py run the same code against a real apiserver."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pykubeadm.kubelet.api import ApiError


class FakeApi:
    def __init__(self, objects: dict[str, dict[str, Any]] | None = None, *, now: float = 0.0):
        self.objects = dict(objects or {})
        self.gets: list[str] = []
        self.token_requests: list[tuple[str, dict[str, Any]]] = []
        self.now = now

    def put(self, namespace: str, resource: str, name: str, obj: dict[str, Any]) -> None:
        self.objects[f"/api/v1/namespaces/{namespace}/{resource}/{name}"] = obj

    async def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.gets.append(path)
        if path not in self.objects:
            kind = path.split("/")[-2]
            raise ApiError(404, "NotFound", f'{kind} "{path.rsplit("/", 1)[-1]}" not found')
        return self.objects[path]

    async def post(self, path: str, body: Any) -> dict[str, Any]:
        self.token_requests.append((path, body))
        seconds = body["spec"]["expirationSeconds"]
        exp = dt.datetime.fromtimestamp(self.now + seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {**body, "status": {"token": f"token-{len(self.token_requests)}", "expirationTimestamp": exp}}
