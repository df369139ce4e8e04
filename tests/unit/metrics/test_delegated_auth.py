"""Delegated authorization's local decisions and its cache (the integration test asks the real apiserver): health
paths and system:masters never reach the API, other requests are one SubjectAccessReview per user, verb and path
every 10 s, and without an authorization kubeconfig everything else is denied."""

from __future__ import annotations

import asyncio
from typing import Any

from lightkube.models.authorization_v1 import SubjectAccessReviewStatus

from pykubeadm.controllers.app.delegatedauth import DelegatingAuth, User


class FakeReviews:
    """An AsyncClient whose create() answers SubjectAccessReviews from a set of allowed users."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed
        self.calls: list[Any] = []

    async def create(self, review: Any) -> Any:
        self.calls.append(review)
        review.status = SubjectAccessReviewStatus(allowed=review.spec.user in self.allowed)
        return review

    async def close(self) -> None:
        pass


def test_authorize() -> None:
    reviews = FakeReviews({"prometheus"})
    auth = DelegatingAuth(authorization_client=reviews)  # type: ignore[arg-type]
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
    paths = [(c.spec.user, c.spec.nonResourceAttributes.path, c.spec.nonResourceAttributes.verb) for c in reviews.calls]
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
    from lightkube.resources.core_v1 import ConfigMap

    from pykubeadm.controllers.app import delegatedauth
    from pykubeadm.testing.apiserver import generate_pki

    pem = generate_pki(tmp_path / "pki").ca_cert.read_text()
    monkeypatch.setattr(delegatedauth, "_CA_RETRY_INITIAL", 0.01)

    class FlakyApi(FakeReviews):
        def __init__(self) -> None:
            super().__init__(set())
            self.gets = 0

        async def get(self, res: Any, name: str, namespace: str) -> Any:
            self.gets += 1
            assert (res, name, namespace) == (ConfigMap, "extension-apiserver-authentication", "kube-system")
            if self.gets < 3:
                raise ConnectionRefusedError("the apiserver is starting")
            return ConfigMap.from_dict({"metadata": {"name": name}, "data": {"client-ca-file": pem}})

    async def run() -> tuple[bool, bool, int]:
        api = FlakyApi()
        auth = DelegatingAuth(authentication_client=api)  # type: ignore[arg-type]
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
