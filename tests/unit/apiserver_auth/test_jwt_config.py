"""JWT issuers from the --oidc-* flags and AuthenticationConfiguration files, and the claims → user mapping."""

from __future__ import annotations

import dataclasses
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


# --- CEL ------------------------------------------------------------------------------------------------------------

_USER = {"username": {"claim": "sub", "prefix": ""}}


@pytest.mark.parametrize(
    ("jwt_fields", "message"),
    [
        (
            {"claimValidationRules": [{"claim": "hd", "expression": "has(claims.hd)"}]},
            'jwt[0].claimValidationRules[0]: Invalid value: "hd": claim and expression can\'t both be set',
        ),
        (
            {"claimValidationRules": [{}]},
            "jwt[0].claimValidationRules[0]: Required value: claim or expression is required",
        ),
        (
            {"claimValidationRules": [{"claim": "hd", "message": "m"}]},
            'jwt[0].claimValidationRules[0].message: Invalid value: "m": message can\'t be set when claim is set',
        ),
        (
            {"claimValidationRules": [{"expression": "has(claims.hd)", "requiredValue": "x"}]},
            'jwt[0].claimValidationRules[0].requiredValue: Invalid value: "x": requiredValue can\'t be set when '
            "expression is set",
        ),
        (
            {"claimValidationRules": [{"expression": "has(claims.hd)"}, {"expression": "has(claims.hd)"}]},
            'jwt[0].claimValidationRules[1].expression: Duplicate value: "has(claims.hd)"',
        ),
        (
            {"claimValidationRules": [{"expression": "claims.hd =="}]},
            'jwt[0].claimValidationRules[0].expression: Invalid value: "claims.hd ==": compilation failed: ERROR:',
        ),
        (
            {"claimValidationRules": [{"expression": "'not a bool'"}]},
            "jwt[0].claimValidationRules[0].expression: Invalid value: \"'not a bool'\": must evaluate to bool",
        ),
        (
            {"claimMappings": {"username": {"claim": "sub", "expression": "claims.sub"}}},
            'jwt[0].claimMappings.username: Invalid value: "": claim and expression can\'t both be set',
        ),
        ({"claimMappings": {}}, "jwt[0].claimMappings.username: Required value: claim or expression is required"),
        (
            {"claimMappings": {"username": {"expression": "claims.sub", "prefix": "p:"}}},
            'jwt[0].claimMappings.username.prefix: Invalid value: "p:": prefix can\'t be set when expression is set',
        ),
        (
            {"claimMappings": {"username": {"expression": "claims.sub +"}}},
            'jwt[0].claimMappings.username.expression: Invalid value: "claims.sub +": compilation failed',
        ),
        (
            {"claimMappings": {**_USER, "groups": {"claim": "g", "expression": "claims.g"}}},
            'jwt[0].claimMappings.groups: Invalid value: "": claim and expression can\'t both be set',
        ),
        (
            {"claimMappings": {**_USER, "groups": {"expression": "claims.g.nope("}}},
            "jwt[0].claimMappings.groups.expression: Invalid value",
        ),
        (
            {"claimMappings": {**_USER, "uid": {"claim": "sub", "expression": "claims.sub"}}},
            'jwt[0].claimMappings.uid: Invalid value: "": claim and expression can\'t both be set',
        ),
        (
            {"claimMappings": {**_USER, "uid": {"expression": "claims.sub)"}}},
            "jwt[0].claimMappings.uid.expression: Invalid value",
        ),
        (
            {"claimMappings": {**_USER, "extra": [{"key": "tier", "valueExpression": "claims.tier"}]}},
            'jwt[0].claimMappings.extra[0].key: Invalid value: "tier": must be a domain-prefixed path',
        ),
        (
            {"claimMappings": {**_USER, "extra": [{"key": "example.com/Tier", "valueExpression": "claims.t"}]}},
            'jwt[0].claimMappings.extra[0].key: Invalid value: "example.com/Tier": key must be lowercase',
        ),
        (
            {"claimMappings": {**_USER, "extra": [{"key": "a.k8s.io/tier", "valueExpression": "claims.t"}]}},
            "k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use",
        ),
        (
            {"claimMappings": {**_USER, "extra": [{"key": "example.com/tier"}]}},
            "jwt[0].claimMappings.extra[0].valueExpression: Required value: valueExpression is required",
        ),
        (
            {
                "claimMappings": {
                    **_USER,
                    "extra": [
                        {"key": "example.com/t", "valueExpression": "claims.t"},
                        {"key": "example.com/t", "valueExpression": "claims.u"},
                    ],
                }
            },
            'jwt[0].claimMappings.extra[1].key: Duplicate value: "example.com/t"',
        ),
        (
            {"claimMappings": {"username": {"expression": "claims.email"}}},
            'jwt[0].claimMappings.username.expression: Invalid value: "claims.email": claims.email_verified must be '
            "used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or "
            "claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression",
        ),
        (
            # a string literal naming the claim is no use of it
            {
                "claimMappings": {"username": {"expression": "'cel:' + claims.email"}},
                "claimValidationRules": [{"expression": "'claims.email_verified' != ''"}],
            },
            "claims.email_verified must be used in claimMappings.username.expression",
        ),
        (
            {"claimMappings": _USER, "userValidationRules": [{"message": "m"}]},
            "jwt[0].userValidationRules[0].expression: Required value: expression is required",
        ),
        (
            {"claimMappings": _USER, "userValidationRules": [{"expression": "user.username.startsWith("}]},
            "jwt[0].userValidationRules[0].expression: Invalid value",
        ),
        (
            {"claimMappings": _USER, "userValidationRules": [{"expression": "claims.sub == 'x'"}]},
            "undeclared reference to 'claims",
        ),
    ],
)
def test_cel_fields_are_validated_at_start_up(tmp_path: Path, jwt_fields: dict, message: str) -> None:
    with pytest.raises(JWTConfigError) as e:
        issuers_from_authentication_config(_authn_config(tmp_path, _jwt(**jwt_fields)))
    assert message in str(e.value)
    assert str(e.value).startswith("--authentication-config: ")


def _cel_issuer(tmp_path: Path) -> JWTIssuer:
    [issuer] = issuers_from_authentication_config(
        _authn_config(
            tmp_path,
            _jwt(
                claimValidationRules=[
                    {"expression": 'claims.?hd.orValue("") == "example.com"', "message": "hd must be example.com"},
                    {"expression": "claims.?email_verified.orValue(true)", "message": "email not verified"},
                ],
                claimMappings={
                    "username": {"expression": "'cel:' + claims.email"},
                    "groups": {"expression": "claims.?roles.orValue([]).map(r, 'role:' + r)"},
                    "uid": {"expression": "claims.sub"},
                    "extra": [
                        {"key": "example.com/tier", "valueExpression": "claims.?tier.orValue('')"},
                        {"key": "example.com/hd", "valueExpression": "[claims.?hd.orValue(''), '']"},
                    ],
                },
                userValidationRules=[
                    {"expression": "!user.username.startsWith('cel:system:')", "message": "no system users"},
                    {"expression": "!('role:banned' in user.groups)", "message": "banned"},
                ],
            ),
        )
    )
    return dataclasses.replace(issuer, ca_pem="")  # the issuer's TLS is not used here


def test_cel_mappings_and_rules_map_and_reject(tmp_path: Path) -> None:
    a = JWTAuthenticator(_cel_issuer(tmp_path))
    u = a.user({"sub": "u-1", "email": "jo@example.com", "hd": "example.com", "roles": ["dev"], "tier": "gold"})
    assert (u.name, u.uid, u.groups) == ("cel:jo@example.com", "u-1", ("role:dev",))
    assert u.extra == {"example.com/tier": ("gold",), "example.com/hd": ("example.com",)}
    # an empty extra value is no value; no groups claim is no groups
    plain = a.user({"sub": "u-2", "email": "x@example.com", "hd": "example.com"})
    assert plain.groups == () and plain.extra == {"example.com/hd": ("example.com",)}

    with pytest.raises(AuthenticationError) as e:
        a.user({"sub": "u-1", "email": "jo@example.com"})
    assert str(e.value) == (
        "oidc: error evaluating claim validation expression: validation expression "
        '\'claims.?hd.orValue("") == "example.com"\' failed: hd must be example.com'
    )
    with pytest.raises(AuthenticationError, match=r"validation expression 'claims\.\?email_verified"):
        a.user({"sub": "u", "email": "jo@example.com", "hd": "example.com", "email_verified": False})
    with pytest.raises(
        AuthenticationError, match=r"oidc: error evaluating user info validation rule: .* no system users"
    ):
        a.user({"sub": "u", "email": "system:admin", "hd": "example.com"})
    with pytest.raises(AuthenticationError, match="failed: banned"):
        a.user({"sub": "u", "email": "b@example.com", "hd": "example.com", "roles": ["banned"]})
    with pytest.raises(
        AuthenticationError, match="oidc: error evaluating username claim expression: no such key: email"
    ):
        a.user({"sub": "u", "hd": "example.com"})
    with pytest.raises(AuthenticationError, match="oidc: error evaluating group claim expression"):
        a.user({"sub": "u", "email": "e@example.com", "hd": "example.com", "roles": "dev"})
    with pytest.raises(AuthenticationError, match="uid claim expression must return a string"):
        a.user({"sub": 7, "email": "e@example.com", "hd": "example.com"})


def test_cel_username_must_be_a_non_empty_string(tmp_path: Path) -> None:
    [issuer] = issuers_from_authentication_config(
        _authn_config(tmp_path, _jwt(claimMappings={"username": {"expression": "claims.name"}}))
    )
    a = JWTAuthenticator(dataclasses.replace(issuer, ca_pem=""))
    with pytest.raises(AuthenticationError, match="oidc: empty username via CEL expression is not allowed"):
        a.user({"name": ""})
    with pytest.raises(AuthenticationError, match="username claim expression must return a string"):
        a.user({"name": 3})
    assert a.user({"name": "n"}).name == "n"
