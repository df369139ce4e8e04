"""JWT issuers from the --oidc-* flags and AuthenticationConfiguration files, and the claims → user mapping."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pykubeadm.apiserver.authn.jwt import jwt_authenticators
from pykubeadm.apiserver.authn.jwt.authenticator import JWTAuthenticator
from pykubeadm.apiserver.authn.jwt.config import (
    JWTConfigError,
    JWTIssuer,
    issuers_from_authentication_config,
    issuers_from_flags,
)
from pykubeadm.apiserver.authn.user import AuthenticationError

ISSUER = "https://issuer.example"


def _no_read(path: str) -> str:
    raise AssertionError("no file expected")


def test_flag_defaults_follow_kube() -> None:
    [i] = issuers_from_flags({"oidc-issuer-url": ISSUER, "oidc-client-id": "kubectl"}, _no_read)
    assert (i.username_claim, i.username_prefix, i.audiences, i.signing_algs) == (
        "sub",
        ISSUER + "#",
        ("kubectl",),
        ("RS256",),
    )
    [e] = issuers_from_flags(
        {"oidc-issuer-url": ISSUER, "oidc-client-id": "k", "oidc-username-claim": "email"}, _no_read
    )
    assert e.username_prefix == ""
    [n] = issuers_from_flags({"oidc-issuer-url": ISSUER, "oidc-client-id": "k", "oidc-username-prefix": "-"}, _no_read)
    assert n.username_prefix == ""
    [r] = issuers_from_flags(
        {
            "oidc-issuer-url": ISSUER,
            "oidc-client-id": "k",
            "oidc-username-prefix": "oidc:",
            "oidc-groups-claim": "groups",
            "oidc-groups-prefix": "oidc:",
            "oidc-required-claim": ["hd=example.com", "tier=gold"],
            "oidc-signing-algs": "RS256,ES256",
            "oidc-ca-file": "/ca.pem",
        },
        lambda p: f"PEM of {p}",
    )
    assert r.required_claims == {"hd": "example.com", "tier": "gold"} and r.signing_algs == ("RS256", "ES256")
    assert r.ca_pem == "PEM of /ca.pem" and (r.groups_claim, r.groups_prefix) == ("groups", "oidc:")
    assert issuers_from_flags({}, _no_read) == []


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            {"oidc-issuer-url": "http://issuer", "oidc-client-id": "k"},
            '--oidc-issuer-url: Invalid value: "http://issuer": URL scheme must be https',
        ),
        ({"oidc-issuer-url": ISSUER}, "--oidc-client-id: Required value"),
        ({"oidc-client-id": "k"}, "--oidc-client-id requires --oidc-issuer-url"),
        (
            {"oidc-issuer-url": ISSUER, "oidc-client-id": "k", "oidc-signing-algs": "HS256"},
            '--oidc-signing-algs: Unsupported value: "HS256"',
        ),
        (
            {"oidc-issuer-url": ISSUER, "oidc-client-id": "k", "oidc-required-claim": ["hd"]},
            '--oidc-required-claim: Invalid value: "hd"',
        ),
    ],
)
def test_bad_flags_name_the_flag(flags: dict, message: str) -> None:
    with pytest.raises(JWTConfigError) as e:
        issuers_from_flags(flags, _no_read)
    assert message in str(e.value)


def _authn_config(tmp_path: Path, *jwts: dict) -> Path:
    p = tmp_path / "authn.yaml"
    p.write_text(
        yaml.safe_dump(
            {"apiVersion": "apiserver.config.k8s.io/v1beta1", "kind": "AuthenticationConfiguration", "jwt": list(jwts)}
        )
    )
    return p


def _jwt(url: str = ISSUER, **extra: object) -> dict:
    doc: dict = {
        "issuer": {"url": url, "audiences": ["kubectl"], "certificateAuthority": "PEM"},
        "claimMappings": {"username": {"claim": "email", "prefix": ""}, "groups": {"claim": "groups", "prefix": "g:"}},
    }
    doc.update(extra)
    return doc


def test_authentication_config_with_several_issuers(tmp_path: Path) -> None:
    path = _authn_config(
        tmp_path,
        _jwt(claimValidationRules=[{"claim": "hd", "requiredValue": "example.com"}]),
        _jwt(
            "https://second.example",
            claimMappings={"username": {"claim": "sub", "prefix": "second:"}, "uid": {"claim": "sub"}},
        ),
    )
    first, second = issuers_from_authentication_config(path)
    assert (first.username_claim, first.username_prefix, first.groups_prefix, first.ca_pem) == (
        "email",
        "",
        "g:",
        "PEM",
    )
    assert first.required_claims == {"hd": "example.com"}
    assert (second.url, second.username_prefix, second.uid_claim, second.groups_claim) == (
        "https://second.example",
        "second:",
        "sub",
        "",
    )


@pytest.mark.parametrize(
    ("jwts", "message"),
    [
        (
            [_jwt(claimValidationRules=[{"expression": "claims.hd == 'x'"}])],
            "jwt[0].claimValidationRules[0].expression: Invalid value",
        ),
        ([_jwt(userValidationRules=[{"expression": "true"}])], "jwt[0].userValidationRules[0].expression"),
        ([_jwt(claimMappings={"username": {"expression": "claims.sub"}})], "jwt[0].claimMappings.username.expression"),
        ([_jwt(claimMappings={"username": {"claim": "sub"}})], "jwt[0].claimMappings.username.prefix: Required value"),
        ([_jwt(), _jwt()], f'jwt[1].issuer.url: Duplicate value: "{ISSUER}"'),
        (
            [_jwt(issuer={"url": ISSUER, "audiences": ["k"], "egressSelectorType": "cluster"})],
            'jwt[0].issuer: unknown field "egressSelectorType"',
        ),
        ([_jwt(claimMapping={})], 'jwt[0]: unknown field "claimMapping"'),
        ([_jwt("http://plain")], 'jwt[0].issuer.url: Invalid value: "http://plain": URL scheme must be https'),
        (
            [
                {
                    "issuer": {"url": ISSUER, "audiences": ["a", "b"]},
                    "claimMappings": {"username": {"claim": "sub", "prefix": ""}},
                }
            ],
            "audienceMatchPolicy must be MatchAny",
        ),
    ],
)
def test_bad_authentication_configs_name_the_field(tmp_path: Path, jwts: list, message: str) -> None:
    with pytest.raises(JWTConfigError) as e:
        issuers_from_authentication_config(_authn_config(tmp_path, *jwts))
    assert message in str(e.value)
    if "expression" in message:
        assert "CEL expressions are not supported yet" in str(e.value)


def test_anonymous_section_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "authn.yaml"
    path.write_text(
        "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: false\n"
    )
    with pytest.raises(JWTConfigError, match="anonymous: Invalid value: anonymous authentication is configured with"):
        issuers_from_authentication_config(path)


def test_authentication_config_and_oidc_flags_are_exclusive(tmp_path: Path) -> None:
    path = _authn_config(tmp_path, _jwt())
    with pytest.raises(JWTConfigError, match="authentication-config file and oidc-\\* flags are mutually exclusive"):
        jwt_authenticators({"authentication-config": str(path), "oidc-issuer-url": ISSUER}, lambda f, v: Path(v))


def test_claims_to_user() -> None:
    a = JWTAuthenticator(
        JWTIssuer(
            url=ISSUER,
            audiences=("k",),
            username_claim="email",
            groups_claim="groups",
            groups_prefix="oidc:",
            required_claims={"hd": "example.com"},
        )
    )
    u = a.user({"email": "jane@example.com", "groups": ["devs", "ops"], "hd": "example.com", "email_verified": True})
    assert (u.name, u.groups) == ("jane@example.com", ("oidc:devs", "oidc:ops"))
    assert a.user({"email": "x@y", "groups": "solo", "hd": "example.com"}).groups == ("oidc:solo",)
    with pytest.raises(AuthenticationError, match="email not verified"):
        a.user({"email": "x@y", "email_verified": False, "hd": "example.com"})
    with pytest.raises(AuthenticationError, match="required claim hd not present"):
        a.user({"email": "x@y"})
    with pytest.raises(AuthenticationError, match="claim not present"):
        a.user({"hd": "example.com"})
