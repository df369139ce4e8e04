"""kube-system/extension-apiserver-authentication as kube-apiserver publishes it: the data built from the flags (keys,
compact JSON arrays, PEM bundles), the HA merge with what other apiservers stored, and the controller's writes on the
in-memory store (created once, never rewritten unchanged, restored after deletion, combined with a sibling's CA)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pykubeadm.apiserver.clusterauthtrust import (
    ClusterAuthenticationInfo,
    ClusterAuthenticationTrustController,
    authentication_info_from_options,
    combine,
    configmap_data,
    desired_data,
    info_from_data,
)
from pykubeadm.apiserver.options import ServerOptions
from pykubeadm.apiserver.registry import RequestContext
from pykubeadm.apiserver.state import ApiState
from pykubeadm.storage import open_store

NOW = dt.datetime.now(dt.UTC)


def ca_pem(cn: str, not_after: dt.datetime | None = None) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    not_after = not_after or NOW + dt.timedelta(days=3650)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(min(NOW, not_after) - dt.timedelta(days=1))
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def cas() -> dict[str, bytes]:
    return {name: ca_pem(name) for name in ("kubernetes", "front-proxy-ca", "other-cluster", "other-front-proxy")}


def kubeadm_options(tmp_path: Path, cas: dict[str, bytes]) -> ServerOptions:
    """The request-header flags of kubeadm's kube-apiserver manifest."""
    (tmp_path / "ca.crt").write_bytes(cas["kubernetes"])
    (tmp_path / "front-proxy-ca.crt").write_bytes(cas["front-proxy-ca"])
    return ServerOptions(
        client_ca_file=tmp_path / "ca.crt",
        requestheader_client_ca_file=tmp_path / "front-proxy-ca.crt",
        requestheader_allowed_names=["front-proxy-client"],
        requestheader_username_headers=["X-Remote-User"],
        requestheader_group_headers=["X-Remote-Group"],
        requestheader_extra_headers_prefix=["X-Remote-Extra-"],
    )


def test_data_from_kubeadm_flags(tmp_path: Path, cas: dict[str, bytes]) -> None:
    data = configmap_data(authentication_info_from_options(kubeadm_options(tmp_path, cas)))
    assert data == {
        "client-ca-file": cas["kubernetes"].decode(),
        "requestheader-client-ca-file": cas["front-proxy-ca"].decode(),
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-uid-headers": "[]",
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
    }
    assert x509.load_pem_x509_certificates(data["client-ca-file"].encode())[0].subject.rfc4514_string() == (
        "CN=kubernetes"
    )


def test_data_without_requestheader_flags_is_only_the_client_ca(tmp_path: Path, cas: dict[str, bytes]) -> None:
    (tmp_path / "ca.crt").write_bytes(cas["kubernetes"])
    options = ServerOptions(client_ca_file=tmp_path / "ca.crt", requestheader_username_headers=["X-Remote-User"])
    assert configmap_data(authentication_info_from_options(options)) == {"client-ca-file": cas["kubernetes"].decode()}
    assert configmap_data(authentication_info_from_options(ServerOptions())) == {}


def test_requestheader_without_client_ca_and_empty_lists(tmp_path: Path, cas: dict[str, bytes]) -> None:
    (tmp_path / "fp.crt").write_bytes(cas["front-proxy-ca"])
    options = ServerOptions(
        requestheader_client_ca_file=tmp_path / "fp.crt",
        raw_flags={"requestheader-uid-headers": "X-Remote-Uid,X-Remote-Other-Uid"},
    )
    data = configmap_data(authentication_info_from_options(options))
    assert data == {
        "requestheader-client-ca-file": cas["front-proxy-ca"].decode(),
        "requestheader-allowed-names": "[]",
        "requestheader-username-headers": "[]",
        "requestheader-uid-headers": '["X-Remote-Uid","X-Remote-Other-Uid"]',
        "requestheader-group-headers": "[]",
        "requestheader-extra-headers-prefix": "[]",
    }


def test_combine_keeps_what_other_apiservers_stored(tmp_path: Path, cas: dict[str, bytes]) -> None:
    mine = authentication_info_from_options(kubeadm_options(tmp_path, cas))
    stored = {
        "client-ca-file": cas["other-cluster"].decode() + cas["kubernetes"].decode(),
        "requestheader-client-ca-file": cas["other-front-proxy"].decode(),
        "requestheader-allowed-names": '["aggregator"]',
        "requestheader-username-headers": '["X-Remote-User","X-Forwarded-User"]',
        "requestheader-group-headers": "null",
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
    }
    data = desired_data(stored, mine)
    # stored certificates first, then ours, each once
    assert data["client-ca-file"] == cas["other-cluster"].decode() + cas["kubernetes"].decode()
    assert data["requestheader-client-ca-file"] == (cas["other-front-proxy"] + cas["front-proxy-ca"]).decode()
    assert json.loads(data["requestheader-allowed-names"]) == ["aggregator", "front-proxy-client"]
    assert json.loads(data["requestheader-username-headers"]) == ["X-Remote-User", "X-Forwarded-User"]
    assert json.loads(data["requestheader-group-headers"]) == ["X-Remote-Group"]
    assert json.loads(data["requestheader-extra-headers-prefix"]) == ["X-Remote-Extra-"]
    assert data["requestheader-uid-headers"] == "[]"
    # applying it again changes nothing: the sync converges
    assert desired_data(data, mine) == data


def test_combine_drops_certificates_expired_more_than_five_minutes_ago(cas: dict[str, bytes]) -> None:
    long_expired = ca_pem("old", NOW - dt.timedelta(minutes=6))
    just_expired = ca_pem("recent", NOW - dt.timedelta(minutes=4))
    stored = ClusterAuthenticationInfo(client_ca=long_expired + just_expired)
    combined = combine(stored, ClusterAuthenticationInfo(client_ca=cas["kubernetes"]), now=NOW)
    assert combined.client_ca == just_expired + cas["kubernetes"]


def test_malformed_stored_data_is_an_error(cas: dict[str, bytes]) -> None:
    with pytest.raises(ValueError):
        info_from_data({"requestheader-allowed-names": "front-proxy-client"})
    with pytest.raises(ValueError):
        info_from_data({"requestheader-group-headers": '{"a": 1}'})
    with pytest.raises(ValueError):
        desired_data({"client-ca-file": "not a certificate"}, ClusterAuthenticationInfo(client_ca=cas["kubernetes"]))


async def _nobody(*_: object) -> None:
    return None


def test_controller_writes_once_restores_and_merges_with_a_sibling(tmp_path: Path, cas: dict[str, bytes]) -> None:
    async def scenario() -> None:
        backend = await open_store("memory://")
        state = ApiState(backend=backend, version_info={}, authenticator=_nobody, authorizer=_nobody)  # type: ignore[arg-type]
        try:
            mine = authentication_info_from_options(kubeadm_options(tmp_path, cas))
            controller = ClusterAuthenticationTrustController(state, lambda: mine)
            store = state.store("configmaps")
            assert await controller.sync() is True  # creates kube-system too
            assert await state.store("namespaces").try_get("", "kube-system") is not None
            cm = await store.get("kube-system", "extension-apiserver-authentication")
            assert cm["data"] == configmap_data(mine)
            assert await controller.sync() is False  # unchanged: no write
            unchanged = await store.get("kube-system", "extension-apiserver-authentication")
            assert unchanged["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]

            sibling = ClusterAuthenticationInfo(client_ca=cas["other-cluster"])
            assert await ClusterAuthenticationTrustController(state, lambda: sibling).sync() is True
            merged = await store.get("kube-system", "extension-apiserver-authentication")
            assert merged["data"]["client-ca-file"] == (cas["kubernetes"] + cas["other-cluster"]).decode()
            assert await controller.sync() is False  # ours is already in: the two apiservers do not fight

            await store.delete("kube-system", "extension-apiserver-authentication", RequestContext())
            assert await controller.sync() is True
            restored = await store.get("kube-system", "extension-apiserver-authentication")
            assert restored["data"] == configmap_data(mine)
        finally:
            await backend.close()

    asyncio.run(scenario())


def test_controller_run_retries_until_it_can_write(tmp_path: Path, cas: dict[str, bytes]) -> None:
    """A failing sync (here: the CA file is not there yet) never ends the controller: it retries with backoff."""

    async def scenario() -> None:
        backend = await open_store("memory://")
        state = ApiState(backend=backend, version_info={}, authenticator=_nobody, authorizer=_nobody)  # type: ignore[arg-type]
        options = ServerOptions(client_ca_file=tmp_path / "ca.crt")
        failed = asyncio.Event()

        def required() -> ClusterAuthenticationInfo:
            try:
                return authentication_info_from_options(options)
            except OSError:
                failed.set()
                raise

        task = asyncio.create_task(ClusterAuthenticationTrustController(state, required).run())
        try:
            async with asyncio.timeout(30):
                await failed.wait()
            (tmp_path / "ca.crt").write_bytes(cas["kubernetes"])
            store = state.store("configmaps")
            async with asyncio.timeout(30):
                while (cm := await store.try_get("kube-system", "extension-apiserver-authentication")) is None:
                    await asyncio.sleep(0.05)
            assert cm["data"] == {"client-ca-file": cas["kubernetes"].decode()}
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await backend.close()

    asyncio.run(scenario())
