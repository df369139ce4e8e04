"""Container environment as the kubelet builds it: envFrom, env, $(VAR) expansion, downward API, errors."""

from __future__ import annotations

import asyncio
import base64

import pytest
from tests.unit.kubelet.fakeapi import FakeApi

from pykubeadm.kubelet.envvars import (
    EnvError,
    ObjectCache,
    container_env,
    expand,
    expand_command,
    field_value,
    resource_value,
)


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def pod(containers: list[dict], **meta) -> dict:
    return {
        "metadata": {
            "name": "web",
            "namespace": "team",
            "uid": "u-1",
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"note": 'say "hi"'},
            **meta,
        },
        "spec": {"nodeName": "n1", "serviceAccountName": "robot", "containers": containers},
    }


@pytest.fixture
def api() -> FakeApi:
    a = FakeApi()
    a.put("team", "configmaps", "cfg", {"data": {"COLOR": "blue", "1bad": "x", "size": "3", "a.b-c": "ok"}})
    a.put("team", "secrets", "creds", {"data": {"PASSWORD": b64("s3cret"), "USER": b64("admin")}})
    return a


async def env_of(container: dict, api: FakeApi, **kw) -> dict[str, str]:
    p = pod([container])
    return await container_env(p, container, api, node_name="n1", host_ip="127.0.10.1", pod_ip="127.0.10.1", **kw)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("$(A)-$(B)", "1-2"),
        ("$$(A)", "$(A)"),  # escaped
        ("$(MISSING)", "$(MISSING)"),  # unknown stays as written
        ("$(A", "$(A"),  # unclosed
        ("a$b", "a$b"),
        ("end$", "end$"),
        ("$(A)$(A)", "11"),
    ],
)
def test_expand_like_kubernetes(value: str, expected: str) -> None:
    assert expand(value, {"A": "1"}, {"B": "2"}) == expected


def test_command_and_args_expand_against_the_environment() -> None:
    container = {"command": ["sh", "-c", "echo $(MSG) $$(MSG) $(NOPE)"], "args": ["$(MSG)"]}
    assert expand_command(container, {"MSG": "hi"}) == (["sh", "-c", "echo hi $(MSG) $(NOPE)"], ["hi"])


async def test_env_from_and_env_with_expansion_and_precedence(api: FakeApi) -> None:
    events: list[tuple[str, str]] = []
    container = {
        "name": "app",
        "envFrom": [{"configMapRef": {"name": "cfg"}}, {"secretRef": {"name": "creds"}, "prefix": "DB_"}],
        "env": [
            {"name": "COLOR", "value": "red"},  # env overrides envFrom
            {"name": "GREETING", "value": "hi $(DB_USER) in $(COLOR) at $(SVC_HOST)"},
            {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "PASSWORD"}}},
            {"name": "SIZE", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "size"}}},
        ],
    }
    env = await env_of(
        container, api, service_env={"SVC_HOST": "10.0.0.1", "COLOR": "svc"}, on_event=lambda *e: events.append(e)
    )
    assert env["COLOR"] == "red"
    assert env["DB_USER"] == "admin" and env["DB_PASSWORD"] == "s3cret"
    assert env["GREETING"] == "hi admin in red at 10.0.0.1"
    assert env["PW"] == "s3cret" and env["SIZE"] == "3"
    assert env["a.b-c"] == "ok"
    assert "1bad" not in env
    assert env["SVC_HOST"] == "10.0.0.1"
    assert events == [
        (
            "InvalidEnvironmentVariableNames",
            "Keys [1bad] from the EnvFrom configMap team/cfg were skipped since they are considered invalid "
            "environment variable names.",
        )
    ]


@pytest.mark.parametrize(
    ("container", "message"),
    [
        ({"envFrom": [{"configMapRef": {"name": "nope"}}]}, 'configmap "nope" not found'),
        ({"envFrom": [{"secretRef": {"name": "nope"}}]}, 'secret "nope" not found'),
        (
            {"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k"}}}]},
            'secret "nope" not found',
        ),
        (
            {"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "K"}}}]},
            "couldn't find key K in ConfigMap team/cfg",
        ),
        (
            {"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "K"}}}]},
            "couldn't find key K in Secret team/creds",
        ),
    ],
)
async def test_missing_objects_and_keys_worded_as_the_kubelet(api: FakeApi, container: dict, message: str) -> None:
    with pytest.raises(EnvError) as e:
        await env_of({"name": "c", **container}, api)
    assert str(e.value) == message


async def test_optional_references_are_skipped(api: FakeApi) -> None:
    container = {
        "name": "c",
        "envFrom": [{"secretRef": {"name": "nope", "optional": True}}],
        "env": [
            {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k", "optional": True}}},
            {"name": "B", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k", "optional": True}}},
        ],
    }
    assert await env_of(container, api) == {}


async def test_field_refs() -> None:
    p = pod([])
    get = lambda path: field_value(p, path, node_name="n1", host_ips=["127.0.10.1", "::1"], pod_ips=["127.0.10.1"])  # noqa: E731
    assert get("metadata.name") == "web"
    assert get("metadata.namespace") == "team"
    assert get("metadata.uid") == "u-1"
    assert get("metadata.labels['app']") == "web"
    assert get("metadata.labels['absent']") == ""
    assert get("metadata.annotations['note']") == 'say "hi"'
    assert get("metadata.labels") == 'app="web"\ntier="front"'
    assert get("metadata.annotations") == 'note="say \\"hi\\""'
    assert get("spec.nodeName") == "n1"
    assert get("spec.serviceAccountName") == "robot"
    assert get("status.hostIP") == "127.0.10.1"
    assert get("status.hostIPs") == "127.0.10.1,::1"
    assert get("status.podIP") == "127.0.10.1"
    assert get("status.podIPs") == "127.0.10.1"
    with pytest.raises(EnvError):
        get("spec.bogus")


@pytest.mark.parametrize(
    ("resources", "ref", "expected"),
    [
        ({"limits": {"cpu": "500m"}}, {"resource": "limits.cpu"}, "1"),  # rounded up to whole cores
        ({"limits": {"cpu": "500m"}}, {"resource": "limits.cpu", "divisor": "1m"}, "500"),
        ({"limits": {"cpu": "1500m"}}, {"resource": "limits.cpu"}, "2"),
        ({"requests": {"cpu": "250m"}}, {"resource": "requests.cpu", "divisor": "100m"}, "3"),
        ({"limits": {"memory": "64Mi"}}, {"resource": "limits.memory"}, str(64 * 1024 * 1024)),
        ({"limits": {"memory": "64Mi"}}, {"resource": "limits.memory", "divisor": "1Mi"}, "64"),
        ({"limits": {"memory": "1G"}}, {"resource": "limits.memory", "divisor": "1Mi"}, "954"),
        ({}, {"resource": "limits.cpu"}, "4"),  # unset limit: node allocatable
        ({}, {"resource": "limits.memory", "divisor": "1Gi"}, "8"),
        ({}, {"resource": "requests.memory"}, "0"),
        ({"limits": {"memory": "2Gi"}}, {"resource": "requests.memory", "divisor": "1Gi"}, "2"),  # request = limit
    ],
)
def test_resource_field_refs(resources: dict, ref: dict, expected: str) -> None:
    container = {"name": "c", "resources": resources}
    allocatable = {"cpu": "4", "memory": "8Gi"}
    assert resource_value(pod([container]), container, ref, allocatable) == expected


async def test_resource_field_ref_in_env_names_another_container(api: FakeApi) -> None:
    side = {"name": "side", "resources": {"limits": {"memory": "32Mi"}}}
    main = {
        "name": "main",
        "env": [
            {
                "name": "SIDE_MEM",
                "valueFrom": {
                    "resourceFieldRef": {"containerName": "side", "resource": "limits.memory", "divisor": "1Mi"}
                },
            }
        ],
    }
    p = pod([main, side])
    env = await container_env(p, main, api, node_name="n1", host_ip="h", pod_ip="p")
    assert env == {"SIDE_MEM": "32"}


async def test_shared_object_cache_reads_once_per_ttl(api: FakeApi) -> None:
    now = [0.0]
    cache = ObjectCache(api, ttl=5.0, clock=lambda: now[0])
    got = await asyncio.gather(*(cache.get("team", "configmaps", "cfg") for _ in range(20)))
    assert all(g == got[0] for g in got) and got[0]["data"]["COLOR"] == "blue"
    assert await cache.get("team", "configmaps", "absent") is None
    assert api.gets.count("/api/v1/namespaces/team/configmaps/cfg") == 1
    container = {"name": "c", "envFrom": [{"configMapRef": {"name": "cfg"}}]}
    p = pod([container])
    await container_env(p, container, api, node_name="n1", host_ip="h", pod_ip="p", objects=cache)
    assert api.gets.count("/api/v1/namespaces/team/configmaps/cfg") == 1
    now[0] = 6.0
    api.put("team", "configmaps", "cfg", {"data": {"COLOR": "green"}})
    env = await container_env(p, container, api, node_name="n1", host_ip="h", pod_ip="p", objects=cache)
    assert env == {"COLOR": "green"}


async def test_object_cache_does_not_remember_errors() -> None:
    from pykubeadm.kubelet.api import ApiError

    calls = []

    class Flaky:
        async def get(self, path: str) -> dict:
            calls.append(path)
            if len(calls) == 1:
                raise ApiError(500, "InternalError", "etcd is down")
            return {"data": {}}

    cache = ObjectCache(Flaky(), ttl=60)
    with pytest.raises(EnvError) as e:
        await cache.get("ns", "secrets", "s")
    assert str(e.value) == "failed to get secret ns/s: etcd is down"
    assert await cache.get("ns", "secrets", "s") == {"data": {}}
