"""Delegated authorization's local decisions and its cache (the integration test asks the real apiserver): health
paths and system:masters never reach the API, other requests are one SubjectAccessReview per user, verb and path
every 10 s, and without an authorization kubeconfig everything else is denied."""

from __future__ import annotations

import asyncio
from typing import Any

from pykubeadm.controllers.app.delegatedauth import DelegatingAuth, User


class FakeReviews:
    """An API client (delegatedauth.ApiClient) that answers SubjectAccessReviews from a set of allowed users."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed
        self.calls: list[Any] = []

    async def get(self, path: str) -> dict[str, Any]:
        raise AssertionError(f"unexpected GET {path}")

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        assert path == "/apis/authorization.k8s.io/v1/subjectaccessreviews"
        assert (body["apiVersion"], body["kind"]) == ("authorization.k8s.io/v1", "SubjectAccessReview")
        self.calls.append(body)
        return {**body, "status": {"allowed": body["spec"]["user"] in self.allowed}}

    async def close(self) -> None:
        pass


def test_authorize() -> None:
    reviews = FakeReviews({"prometheus"})
    auth = DelegatingAuth(authorization_client=reviews)
    prom, anon = User("prometheus", ("system:monitoring",)), User("system:anonymous", ("system:unauthenticated",))
    admin = User("kubernetes-admin", ("system:masters", "system:authenticated"))

    async def decide() -> list[bool]:
        return [
            await auth.authorize(anon, "get", "/healthz"),
            await auth.authorize(anon, "get", "/livez/ping"),
            await auth.authorize(admin, "get", "/metrics"),
            await auth.authorize(prom, "get", "/metrics"),
            await auth.authorize(prom, "get", "/metrics"),  # cached
            await auth.authorize(anon, "get", "/metrics"),
            await auth.authorize(anon, "get", "/healthzfoo"),
        ]

    assert asyncio.run(decide()) == [True, True, True, True, True, False, False]
    specs = [c["spec"] for c in reviews.calls]
    paths = [(s["user"], s["nonResourceAttributes"]["path"], s["nonResourceAttributes"]["verb"]) for s in specs]
    assert paths == [
        ("prometheus", "/metrics", "get"),
        ("system:anonymous", "/metrics", "get"),
        ("system:anonymous", "/healthzfoo", "get"),
    ]


def test_without_authorization_kubeconfig_only_the_health_paths_are_allowed() -> None:
    auth = DelegatingAuth()
    user = User("prometheus", ("system:monitoring",))
    assert asyncio.run(auth.authorize(user, "get", "/readyz")) is True
    assert asyncio.run(auth.authorize(user, "get", "/metrics")) is False


def test_the_cluster_client_ca_is_looked_up_until_published(monkeypatch: Any, tmp_path: Any) -> None:
    """No --client-ca-file (kubeadm's scheduler): the CA comes from extension-apiserver-authentication, retried in the
    background while the API is not up yet."""
    from pykubeadm.controllers.app import delegatedauth
    from pykubeadm.testing.apiserver import generate_pki

    pem = generate_pki(tmp_path / "pki").ca_cert.read_text()
    monkeypatch.setattr(delegatedauth, "_CA_RETRY_INITIAL", 0.01)

    class FlakyApi(FakeReviews):
        def __init__(self) -> None:
            super().__init__(set())
            self.gets = 0

        async def get(self, path: str) -> dict[str, Any]:
            self.gets += 1
            assert path == "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
            if self.gets < 3:
                raise ConnectionRefusedError("the apiserver is starting")
            return {"kind": "ConfigMap", "metadata": {"name": path.rsplit("/", 1)[1]}, "data": {"client-ca-file": pem}}

    async def run() -> tuple[bool, bool, int]:
        api = FlakyApi()
        auth = DelegatingAuth(authentication_client=api)
        await auth.start()
        before = auth._roots is not None
        for _ in range(500):
            if auth._roots is not None:
                break
            await asyncio.sleep(0.01)
        after = auth._roots is not None
        await auth.close()
        return before, after, api.gets

    assert asyncio.run(run()) == (False, True, 3)
