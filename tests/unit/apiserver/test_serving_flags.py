"""kube-apiserver's TLS and serving flags: Go TLS names, feature gates, --request-timeout, --event-ttl's clock."""

from __future__ import annotations

import asyncio
import re
import ssl
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from pykubeadm.apiserver.eventttl import event_last_seen
from pykubeadm.apiserver.middleware.timeout import request_timeout_middleware
from pykubeadm.apiserver.options import options_from_flags
from pykubeadm.apiserver.requestinfo import RequestInfo
from pykubeadm.errors import ValidationError
from pykubeadm.featuregates import FeatureGateError, parse_feature_gates
from pykubeadm.util.gotls import apply_tls_options, openssl_ciphers, tls_version


def test_go_tls_names() -> None:
    assert tls_version("VersionTLS13") is ssl.TLSVersion.TLSv1_3
    with pytest.raises(ValueError, match=re.escape('unknown tls version "TLS1.3"')):
        tls_version("TLS1.3")
    assert (
        openssl_ciphers(["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"])
        == "ECDHE-RSA-AES128-GCM-SHA256"
    )
    with pytest.raises(ValueError, match="Cipher suite TLS_BOGUS not supported or doesn't exist"):
        openssl_ciphers(["TLS_BOGUS"])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    apply_tls_options(ctx, "VersionTLS12", ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"])
    tls12 = [c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"]
    assert ctx.minimum_version is ssl.TLSVersion.TLSv1_2 and tls12 == ["ECDHE-ECDSA-AES256-GCM-SHA384"]


def test_feature_gates_as_kube_parses_them() -> None:
    assert parse_feature_gates("StructuredAuthenticationConfiguration=true,kube:WatchList=false, ") == {
        "StructuredAuthenticationConfiguration": True,
        "WatchList": False,
    }
    assert parse_feature_gates("RotateKubeletServerCertificate=1") == {"RotateKubeletServerCertificate": True}
    with pytest.raises(FeatureGateError, match=r"^unrecognized feature gate: NoSuchGate$"):
        parse_feature_gates("NoSuchGate=true")
    with pytest.raises(
        FeatureGateError, match=re.escape('invalid value of WatchList=yes, err: strconv.ParseBool: parsing "yes"')
    ):
        parse_feature_gates("WatchList=yes")
    with pytest.raises(FeatureGateError, match="missing bool value for WatchList"):
        parse_feature_gates("WatchList")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            {"tls_min_version": "VersionTLS9"},
            'invalid value for flag --tls-min-version: unknown tls version "VersionTLS9"',
        ),
        (
            {"tls_cipher_suites": "TLS_RSA_WITH_AES_128_GCM_SHA256,NOPE"},
            "--tls-cipher-suites: Cipher suite NOPE not supported",
        ),
        (
            {"feature_gates": ("Nope=true",)},
            'invalid argument "Nope=true" for "--feature-gates" flag: unrecognized feature gate: Nope',
        ),
        ({"request_timeout": "ten"}, 'invalid argument "ten" for "--request-timeout" flag'),
        ({"event_ttl": "1x"}, 'invalid argument "1x" for "--event-ttl" flag'),
    ],
)
def test_bad_serving_flags_name_the_flag(tmp_path: Path, flags: dict, message: str) -> None:
    with pytest.raises(ValidationError) as e:
        options_from_flags(flags, tmp_path)
    assert message in str(e.value)


def test_serving_flag_values(tmp_path: Path) -> None:
    o = options_from_flags(
        {
            "tls_min_version": "VersionTLS13",
            "profiling": False,
            "request_timeout": "30s",
            "event_ttl": "2h0m0s",
            "feature_gates": ("WatchList=true", "kube:ConsistentListFromCache=false"),
            "service_account_lookup": False,
        },
        tmp_path,
    )
    assert (o.tls_min_version, o.profiling, o.request_timeout_seconds, o.event_ttl_seconds) == (
        "VersionTLS13",
        False,
        30.0,
        7200.0,
    )
    assert o.feature_gates == {"WatchList": True, "ConsistentListFromCache": False}
    assert o.raw_flags["service-account-lookup"] is False
    d = options_from_flags({}, tmp_path)
    assert d.profiling is True and d.request_timeout_seconds == 60.0 and d.event_ttl_seconds == 3600.0


async def test_request_timeout_answers_504_but_spares_watches() -> None:
    release = asyncio.Event()

    @web.middleware
    async def info(request: web.Request, handler):  # type: ignore[no-untyped-def]
        from pykubeadm.apiserver.handlers.context import INFO_KEY

        verb = "watch" if "watch" in request.query else "get"
        request[INFO_KEY] = RequestInfo(
            "/api/v1/namespaces/default/configmaps", verb, True, "api", "", "v1", "default", "configmaps"
        )
        return await handler(request)

    from pykubeadm.apiserver.middleware.recovery import recovery_middleware

    async def slow(request: web.Request) -> web.Response:
        await asyncio.wait_for(release.wait(), 5)
        return web.Response(text="done")

    app = web.Application(middlewares=[recovery_middleware(), info, request_timeout_middleware(0.2)])
    app.router.add_get("/x", slow)
    async with TestClient(TestServer(app)) as client:
        r = await client.get("/x")
        assert r.status == 504
        body = await r.json()
        assert body["reason"] == "Timeout" and body["message"].startswith("Timeout: request did not complete")
        watch = asyncio.create_task(client.get("/x?watch=1"))
        r = await client.get("/x?timeout=50ms&x=1")  # the watch waits meanwhile, past every timeout
        assert r.status == 504
        r = await client.get("/x")
        assert r.status == 504
        release.set()
        assert (await watch).status == 200


def test_event_last_seen_takes_the_newest_time() -> None:
    ev = {
        "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
        "lastTimestamp": "2026-01-01T00:10:00Z",
        "series": {"lastObservedTime": "2026-01-01T00:20:00.000000Z"},
    }
    assert event_last_seen(ev) == event_last_seen({"eventTime": "2026-01-01T00:20:00.000000Z"})
    assert event_last_seen({"metadata": {}}) is None
