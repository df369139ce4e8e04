"""Service-account JWTs: RS256/ES256 verification with --service-account-key-file keys, issuer, expiry, audiences,
tampering, and the live-object checks."""

from __future__ import annotations

import base64
import json
import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pykubeadm.apiserver.authn.jws import key_id
from pykubeadm.apiserver.authn.serviceaccount import ServiceAccountTokenAuthenticator, load_public_keys
from pykubeadm.apiserver.authn.union import request_authenticator
from pykubeadm.apiserver.authn.user import AuthenticationError, AuthRequest
from tests.unit.apiserver_auth.helpers import ISSUER, bound_claims, mint_jwt


def bearer(token: str) -> AuthRequest:
    return AuthRequest({"Authorization": f"Bearer {token}"})


@pytest.fixture
def authn(sa_key, source):
    sa = ServiceAccountTokenAuthenticator([sa_key.public_key()], [ISSUER], source=source)
    return request_authenticator(tokens=[sa])


A_SA = ("default", "a-sa", "uid-sa-a-sa")


async def test_bound_token_identity(authn, sa_key):
    token = mint_jwt(sa_key, bound_claims(*A_SA), {"kid": key_id(sa_key.public_key())})
    user = await authn(bearer(token))
    assert user.name == "system:serviceaccount:default:a-sa"
    assert user.uid == "uid-sa-a-sa"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated")


async def test_pod_bound_token_adds_pod_extra(authn, sa_key):
    claims = bound_claims(*A_SA)
    claims["kubernetes.io"]["pod"] = {"name": "pod-a", "uid": "uid-pod-a"}
    user = await authn(bearer(mint_jwt(sa_key, claims)))
    assert user.extra["authentication.kubernetes.io/pod-name"] == ("pod-a",)
    assert user.extra["authentication.kubernetes.io/pod-uid"] == ("uid-pod-a",)


async def test_es256_keys_work(source):
    key = ec.generate_private_key(ec.SECP256R1())
    authn = request_authenticator(
        tokens=[ServiceAccountTokenAuthenticator([key.public_key()], [ISSUER], source=source)]
    )
    assert (await authn(bearer(mint_jwt(key, bound_claims(*A_SA))))).name.endswith(":a-sa")


def _tamper(token: str, **changes) -> str:
    header, payload, sig = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims.update(changes)
    new_payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{new_payload}.{sig}"


async def test_tampered_payload_is_rejected(authn, sa_key):
    token = mint_jwt(sa_key, bound_claims(*A_SA))
    forged = _tamper(token, sub="system:serviceaccount:kube-system:admin")
    with pytest.raises(AuthenticationError):
        await authn(bearer(forged))


async def test_tampered_signature_and_alg_none_are_rejected(authn, sa_key):
    token = mint_jwt(sa_key, bound_claims(*A_SA))
    h, p, s = token.split(".")
    flipped = s[:-2] + ("AA" if not s.endswith("AA") else "BB")
    none_header = base64.urlsafe_b64encode(b'{"alg":"none"}').rstrip(b"=").decode()
    hs_header = base64.urlsafe_b64encode(b'{"alg":"HS256"}').rstrip(b"=").decode()
    for bad in (f"{h}.{p}.{flipped}", f"{none_header}.{p}.", f"{hs_header}.{p}.{s}", f"{h}.{p}"):
        with pytest.raises(AuthenticationError):
            await authn(bearer(bad))


async def test_token_signed_by_another_key_is_rejected(authn):
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(AuthenticationError):
        await authn(bearer(mint_jwt(other, bound_claims(*A_SA))))


async def test_expired_and_not_yet_valid_tokens(authn, sa_key):
    with pytest.raises(AuthenticationError, match="service account token has expired"):
        await authn(bearer(mint_jwt(sa_key, bound_claims(*A_SA, lifetime=-120))))
    claims = bound_claims(*A_SA)
    claims["nbf"] = int(time.time()) + 600
    with pytest.raises(AuthenticationError, match="service account token is not valid yet"):
        await authn(bearer(mint_jwt(sa_key, claims)))
    claims = bound_claims(*A_SA, nbf=int(time.time()))
    claims["iat"] = int(time.time()) + 600
    with pytest.raises(AuthenticationError, match="service account token is issued in the future"):
        await authn(bearer(mint_jwt(sa_key, claims)))


async def test_clock_skew_within_a_minute_is_tolerated(authn, sa_key):
    """go-jose's default leeway, which kube's claims validation uses: exp, nbf and iat are judged ±60 s."""
    now = int(time.time())
    for claims in (
        bound_claims(*A_SA, lifetime=-30),  # expired 30 s ago by our clock
        bound_claims(*A_SA, iat=now + 30, nbf=now + 30),  # issued by a clock 30 s ahead of ours
    ):
        assert (await authn(bearer(mint_jwt(sa_key, claims)))).name == f"system:serviceaccount:{A_SA[0]}:{A_SA[1]}"


async def test_unknown_issuer_is_not_ours_and_ends_as_401(sa_key, source):
    sa = ServiceAccountTokenAuthenticator([sa_key.public_key()], [ISSUER], source=source)
    token = mint_jwt(sa_key, bound_claims(*A_SA, iss="https://evil.example"))
    assert await sa(token) is None
    with pytest.raises(AuthenticationError, match="invalid bearer token"):
        await request_authenticator(tokens=[sa])(bearer(token))


async def test_audience_must_intersect(authn, sa_key):
    with pytest.raises(AuthenticationError, match="audiences"):
        await authn(bearer(mint_jwt(sa_key, bound_claims(*A_SA, aud=["vault"]))))


async def test_deleted_or_recreated_service_account_invalidates_token(authn, sa_key, source):
    token = mint_jwt(sa_key, bound_claims(*A_SA))
    source.objects[("serviceaccounts", "default", "a-sa")]["metadata"]["uid"] = "recreated"
    with pytest.raises(AuthenticationError):
        await authn(bearer(token))
    del source.objects[("serviceaccounts", "default", "a-sa")]
    with pytest.raises(AuthenticationError):
        await authn(bearer(token))


async def test_legacy_secret_token(sa_key, source):
    source.put("secrets", {"metadata": {"name": "a-sa-token", "namespace": "default"}})
    claims = {
        "iss": "kubernetes/serviceaccount",
        "sub": "system:serviceaccount:default:a-sa",
        "kubernetes.io/serviceaccount/namespace": "default",
        "kubernetes.io/serviceaccount/secret.name": "a-sa-token",
        "kubernetes.io/serviceaccount/service-account.name": "a-sa",
        "kubernetes.io/serviceaccount/service-account.uid": "uid-sa-a-sa",
    }
    authn = request_authenticator(
        tokens=[ServiceAccountTokenAuthenticator([sa_key.public_key()], [ISSUER], source=source)]
    )
    assert (await authn(bearer(mint_jwt(sa_key, claims)))).name == "system:serviceaccount:default:a-sa"
    del source.objects[("secrets", "default", "a-sa-token")]
    with pytest.raises(AuthenticationError):
        await authn(bearer(mint_jwt(sa_key, claims)))


def test_key_file_may_hold_private_keys_public_keys_and_certs(tmp_path, sa_key, client_ca):
    f = tmp_path / "sa.key"
    f.write_bytes(
        sa_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
        + client_ca.pem()
    )
    keys = load_public_keys([f])
    assert len(keys) == 2
    assert key_id(keys[0]) == key_id(sa_key.public_key())
    empty = tmp_path / "empty.pub"
    empty.write_text("nothing here")
    with pytest.raises(ValueError, match=r"empty\.pub"):
        load_public_keys([empty])
