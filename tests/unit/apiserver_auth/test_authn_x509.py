"""Client-certificate authentication: chain verification against --client-ca-file, CN/O mapping, 401 vs anonymous."""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography.x509.oid import ExtendedKeyUsageOID

from pykubeadm.apiserver.authn.union import request_authenticator
from pykubeadm.apiserver.authn.user import AuthenticationError, AuthRequest
from pykubeadm.apiserver.authn.x509 import X509Authenticator, load_ca_bundle
from tests.unit.apiserver_auth.helpers import NOW, make_ca


@pytest.fixture
def authn(client_ca):
    return request_authenticator(x509=X509Authenticator([client_ca.cert]))


async def test_cn_is_user_and_every_o_is_a_group(authn, client_ca):
    cert = client_ca.issue("system:node:worker-1", ("system:nodes", "extra-group"))
    user = await authn(AuthRequest({}, (cert,)))
    assert user.name == "system:node:worker-1"
    assert user.groups == ("system:nodes", "extra-group", "system:authenticated")
    assert user.uid == ""


async def test_no_certificate_is_anonymous(authn):
    user = await authn(AuthRequest({}))
    assert (user.name, user.groups) == ("system:anonymous", ("system:unauthenticated",))


async def test_certificate_from_another_ca_is_401_not_anonymous(authn):
    other = make_ca("kubernetes")  # same subject name, different key
    with pytest.raises(AuthenticationError):
        await authn(AuthRequest({}, (other.issue("kubernetes-admin", ("system:masters",)),)))


async def test_expired_and_not_yet_valid_certificates_are_rejected(authn, client_ca):
    expired = client_ca.issue("u", not_before=NOW - dt.timedelta(days=2), not_after=NOW - dt.timedelta(days=1))
    future = client_ca.issue("u", not_before=NOW + dt.timedelta(days=1), not_after=NOW + dt.timedelta(days=2))
    for cert in (expired, future):
        with pytest.raises(AuthenticationError, match="verifying certificate"):
            await authn(AuthRequest({}, (cert,)))


async def test_server_only_eku_is_rejected_but_no_eku_is_accepted(authn, client_ca):
    server = client_ca.issue("u", eku=(ExtendedKeyUsageOID.SERVER_AUTH,))
    with pytest.raises(AuthenticationError, match="incompatible key usage"):
        await authn(AuthRequest({}, (server,)))
    bare = client_ca.issue("bare", eku=None)
    assert (await authn(AuthRequest({}, (bare,)))).name == "bare"
    both = client_ca.issue("both", eku=(ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH))
    assert (await authn(AuthRequest({}, (both,)))).name == "both"


async def test_chain_through_an_intermediate_sent_by_the_client(authn, client_ca):
    inter = client_ca.intermediate("intermediate")
    leaf = inter.issue("via-intermediate", ("g",))
    assert (await authn(AuthRequest({}, (leaf, inter.cert)))).name == "via-intermediate"
    with pytest.raises(AuthenticationError):  # the intermediate is not trusted on its own
        await authn(AuthRequest({}, (leaf,)))


async def test_empty_cn_is_not_authenticated_by_x509(authn, client_ca):
    cert = client_ca.issue("", ("system:masters",))
    user = await authn(AuthRequest({}, (cert,)))
    assert user.name == "system:anonymous"


async def test_bad_certificate_with_valid_token_still_authenticates(client_ca):
    async def tokens(token: str):
        from pykubeadm.apiserver.authn.user import UserInfo

        return UserInfo("token-user") if token == "good" else None

    authn = request_authenticator(x509=X509Authenticator([client_ca.cert]), tokens=[tokens])
    other = make_ca("other").issue("x")
    user = await authn(AuthRequest({"Authorization": "Bearer good"}, (other,)))
    assert user.name == "token-user"


def test_load_ca_bundle_errors_name_the_file(tmp_path):
    bad = tmp_path / "ca.crt"
    bad.write_text("not a certificate")
    with pytest.raises(ValueError, match=str(bad)):
        load_ca_bundle(bad)


def test_verification_cache_never_outlives_the_certificate(client_ca):
    from pykubeadm.apiserver.authn.x509 import _VerifyCache

    cache = _VerifyCache(size=2)
    expired = client_ca.issue("u", not_before=NOW - dt.timedelta(days=2), not_after=NOW - dt.timedelta(days=1))
    cache.put(("k",), [expired, client_ca.cert])
    assert cache.get(("k",)) is None
    fresh = client_ca.issue("v")
    cache.put(("a",), [fresh, client_ca.cert])
    cache.put(("b",), "failure")
    cache.put(("c",), "failure")
    assert cache.get(("a",)) is None  # evicted (LRU, size 2)
    assert cache.get(("c",)) == "failure"


async def test_cached_results_are_per_trust_bundle(client_ca):
    other = make_ca("other")
    cert = client_ca.issue("cached-user")
    good = request_authenticator(x509=X509Authenticator([client_ca.cert]))
    bad = request_authenticator(x509=X509Authenticator([other.cert]))
    assert (await good(AuthRequest({}, (cert,)))).name == "cached-user"
    with pytest.raises(AuthenticationError):
        await bad(AuthRequest({}, (cert,)))
    assert (await good(AuthRequest({}, (cert,)))).name == "cached-user"
