"""The JWT issuers the apiserver trusts, from the legacy --oidc-* flags or an AuthenticationConfiguration file
(`apiserver.config.k8s.io/v1beta1`, `--authentication-config`), validated with kube's field paths.

kube's defaults for the flags: the username claim is `sub`; without --oidc-username-prefix the username is prefixed
with `<issuer URL>#` unless the claim is `email` (then not at all); `-` turns prefixing off. The CEL expressions
of a structured issuer (`claimValidationRules[].expression`, `claimMappings.{username,groups,uid}.expression`,
`claimMappings.extra[].valueExpression`, `userValidationRules[].expression`) are validated as kube validates them
(claim and expression are mutually exclusive) and compiled here, once; every error names the field path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from pykubeadm.api.fieldchecks import dns1123_subdomain_errors
from pykubeadm.apiserver.authn.jwt.cel import (
    CLAIMS_ENV,
    USER_ENV,
    CELConfigError,
    ExtraMapping,
    ValidationRule,
    compile_expression,
    uses_claim,
)
from pykubeadm.cel import Environment, Program
from pykubeadm.util.yamlload import load_yaml

__all__ = [
    "DEFAULT_SIGNING_ALGS",
    "SUPPORTED_SIGNING_ALGS",
    "JWTConfigError",
    "JWTIssuer",
    "issuers_from_authentication_config",
    "issuers_from_flags",
]

DEFAULT_SIGNING_ALGS = ("RS256",)
SUPPORTED_SIGNING_ALGS = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512")
_API_VERSIONS = ("apiserver.config.k8s.io/v1beta1", "apiserver.config.k8s.io/v1alpha1", "apiserver.config.k8s.io/v1")
_HTTP_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")
_EMAIL_VERIFIED_REQUIRED = (
    "claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression "
    "or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression"
)
_JWT_FIELDS = frozenset({"issuer", "claimValidationRules", "claimMappings", "userValidationRules"})
_ISSUER_FIELDS = frozenset({"url", "discoveryURL", "certificateAuthority", "audiences", "audienceMatchPolicy"})


class JWTConfigError(Exception):
    """Unusable JWT authentication settings; the message names the flag or field."""


@dataclass(frozen=True)
class JWTIssuer:
    url: str
    audiences: tuple[str, ...]
    discovery_url: str = ""
    #: PEM bundle trusted for the issuer's TLS ("" = the system's roots).
    ca_pem: str = ""
    username_claim: str = "sub"
    username_prefix: str = ""
    groups_claim: str = ""
    groups_prefix: str = ""
    uid_claim: str = ""
    required_claims: Mapping[str, str] = field(default_factory=dict)
    signing_algs: tuple[str, ...] = DEFAULT_SIGNING_ALGS
    #: CEL programs (AuthenticationConfiguration only), compiled at start-up.
    username_expression: Program | None = None
    groups_expression: Program | None = None
    uid_expression: Program | None = None
    extra: tuple[ExtraMapping, ...] = ()
    claim_rules: tuple[ValidationRule, ...] = ()
    user_rules: tuple[ValidationRule, ...] = ()


def _https(where: str, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme != "https":
        raise JWTConfigError(f'{where}: Invalid value: "{url}": URL scheme must be https')
    if parts.username or parts.query or parts.fragment:
        raise JWTConfigError(f'{where}: Invalid value: "{url}": URL must not contain a username, query or fragment')


def _values(flags: Mapping[str, Any], name: str) -> list[str]:
    v = flags.get(name)
    if v is None:
        return []
    items = [v] if isinstance(v, str) else list(v)
    return [x.strip() for item in items for x in str(item).split(",") if x.strip()]


def issuers_from_flags(flags: Mapping[str, Any], read: Callable[[str], str]) -> list[JWTIssuer]:
    """The --oidc-* flags (names without `--`); `read(path)` reads --oidc-ca-file. [] when --oidc-issuer-url is unset."""
    url = flags.get("oidc-issuer-url") or ""
    others = sorted(k for k in flags if k.startswith("oidc-") and k != "oidc-issuer-url" and flags.get(k))
    if not url:
        if others:
            raise JWTConfigError(f"--{others[0]} requires --oidc-issuer-url")
        return []
    _https("--oidc-issuer-url", url)
    client_id = flags.get("oidc-client-id") or ""
    if not client_id:
        raise JWTConfigError("--oidc-client-id: Required value: oidc-client-id is required when oidc-issuer-url is set")
    claim = flags.get("oidc-username-claim") or "sub"
    prefix = flags.get("oidc-username-prefix")
    if prefix is None or prefix == "":
        prefix = "" if claim == "email" else url + "#"
    elif prefix == "-":
        prefix = ""
    required: dict[str, str] = {}
    for pair in _values(flags, "oidc-required-claim"):
        k, sep, v = pair.partition("=")
        if not sep or not k:
            raise JWTConfigError(f'--oidc-required-claim: Invalid value: "{pair}": want key=value')
        required[k] = v
    algs = tuple(_values(flags, "oidc-signing-algs")) or DEFAULT_SIGNING_ALGS
    for a in algs:
        if a not in SUPPORTED_SIGNING_ALGS:
            raise JWTConfigError(
                f'--oidc-signing-algs: Unsupported value: "{a}": supported values: {", ".join(SUPPORTED_SIGNING_ALGS)}'
            )
    ca = ""
    if flags.get("oidc-ca-file"):
        try:
            ca = read(flags["oidc-ca-file"])
        except OSError as e:
            raise JWTConfigError(f"--oidc-ca-file: failed to read {flags['oidc-ca-file']}: {e.strerror}") from None
    return [
        JWTIssuer(
            url=url,
            audiences=(client_id,),
            ca_pem=ca,
            username_claim=claim,
            username_prefix=prefix,
            groups_claim=flags.get("oidc-groups-claim") or "",
            groups_prefix=flags.get("oidc-groups-prefix") or "",
            required_claims=required,
            signing_algs=algs,
        )
    ]


def _compile(env: Environment, path: str, expression: str, boolean: bool = False) -> Program:
    try:
        return compile_expression(env, path, expression, boolean)
    except CELConfigError as e:
        raise JWTConfigError(str(e)) from None


def _object(path: str, m: Any) -> dict[str, Any]:
    if m is None:
        return {}
    if not isinstance(m, dict):
        raise JWTConfigError(f"{path}: Invalid value: want an object")
    return m


def _prefixed_claim_or_expression(
    path: str, m: dict[str, Any], required: bool
) -> tuple[str, str | None, Program | None]:
    """kube's validatePrefixClaimOrExpression: (claim, prefix, compiled expression)."""
    claim, expression, prefix = m.get("claim") or "", m.get("expression") or "", m.get("prefix")
    if claim and expression:
        raise JWTConfigError(f'{path}: Invalid value: "": claim and expression can\'t both be set')
    if required and not claim and not expression:
        raise JWTConfigError(f"{path}: Required value: claim or expression is required")
    if expression:
        if prefix is not None:
            raise JWTConfigError(
                f'{path}.prefix: Invalid value: "{prefix}": prefix can\'t be set when expression is set'
            )
        return "", None, _compile(CLAIMS_ENV, f"{path}.expression", expression)
    if claim and prefix is None:
        raise JWTConfigError(
            f"{path}.prefix: Required value: prefix is required when claim is set. It can be set to an empty string "
            "to disable prefixing"
        )
    return claim, prefix, None


def _claim_rules(path: str, rules: Any) -> tuple[dict[str, str], tuple[ValidationRule, ...]]:
    """claimValidationRules: the required claims (claim + requiredValue) and the CEL rules."""
    required: dict[str, str] = {}
    compiled: list[ValidationRule] = []
    seen: set[str] = set()
    for i, rule in enumerate(rules or []):
        rp = f"{path}[{i}]"
        rule = _object(rp, rule)
        claim, expression = rule.get("claim") or "", rule.get("expression") or ""
        if claim and expression:
            raise JWTConfigError(f'{rp}: Invalid value: "{claim}": claim and expression can\'t both be set')
        if not claim and not expression:
            raise JWTConfigError(f"{rp}: Required value: claim or expression is required")
        if claim:
            if rule.get("message"):
                raise JWTConfigError(
                    f'{rp}.message: Invalid value: "{rule["message"]}": message can\'t be set when claim is set'
                )
            if claim in required:
                raise JWTConfigError(f'{rp}.claim: Duplicate value: "{claim}"')
            required[claim] = str(rule.get("requiredValue") or "")
            continue
        if rule.get("requiredValue"):
            raise JWTConfigError(
                f'{rp}.requiredValue: Invalid value: "{rule["requiredValue"]}": requiredValue can\'t be set when '
                "expression is set"
            )
        if expression in seen:
            raise JWTConfigError(f'{rp}.expression: Duplicate value: "{expression}"')
        seen.add(expression)
        program = _compile(CLAIMS_ENV, f"{rp}.expression", expression, boolean=True)
        compiled.append(ValidationRule(program, str(rule.get("message") or "")))
    return required, tuple(compiled)


def _extra_key(path: str, key: str) -> None:
    if not key:
        raise JWTConfigError(f"{path}: Required value")
    host, sep, rest = key.partition("/")
    if not sep or not host or not rest:
        raise JWTConfigError(f'{path}: Invalid value: "{key}": must be a domain-prefixed path (such as "acme.io/foo")')
    for err in dns1123_subdomain_errors(host):
        raise JWTConfigError(f'{path}: Invalid value: "{host}": {err}')
    if not _HTTP_PATH.match(rest):
        raise JWTConfigError(
            f"{path}: Invalid value: \"{rest}\": Invalid path (regex used for validation is '{_HTTP_PATH.pattern[1:-1]}')"
        )
    if key != key.lower():
        raise JWTConfigError(f'{path}: Invalid value: "{key}": key must be lowercase')
    if host in ("kubernetes.io", "k8s.io") or host.endswith((".kubernetes.io", ".k8s.io")):
        raise JWTConfigError(
            f'{path}: Invalid value: "{key}": k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use'
        )


def _extra(path: str, mappings: Any) -> tuple[ExtraMapping, ...]:
    out: list[ExtraMapping] = []
    for i, m in enumerate(mappings or []):
        mp = f"{path}[{i}]"
        m = _object(mp, m)
        key = m.get("key") or ""
        _extra_key(f"{mp}.key", key)
        if any(e.key == key for e in out):
            raise JWTConfigError(f'{mp}.key: Duplicate value: "{key}"')
        expression = m.get("valueExpression") or ""
        if not expression:
            raise JWTConfigError(f"{mp}.valueExpression: Required value: valueExpression is required")
        out.append(ExtraMapping(key, _compile(CLAIMS_ENV, f"{mp}.valueExpression", expression)))
    return tuple(out)


def _user_rules(path: str, rules: Any) -> tuple[ValidationRule, ...]:
    out: list[ValidationRule] = []
    for i, rule in enumerate(rules or []):
        rp = f"{path}[{i}]"
        rule = _object(rp, rule)
        expression = rule.get("expression") or ""
        if not expression:
            raise JWTConfigError(f"{rp}.expression: Required value: expression is required")
        if any(r.program.expression == expression for r in out):
            raise JWTConfigError(f'{rp}.expression: Duplicate value: "{expression}"')
        program = _compile(USER_ENV, f"{rp}.expression", expression, boolean=True)
        out.append(ValidationRule(program, str(rule.get("message") or "")))
    return tuple(out)


def _jwt(path: str, j: Any, seen: set[str]) -> JWTIssuer:
    if not isinstance(j, dict):
        raise JWTConfigError(f"{path}: Invalid value: want an object")
    for where, allowed, obj in (("", _JWT_FIELDS, j), (".issuer", _ISSUER_FIELDS, j.get("issuer") or {})):
        extra = sorted(set(obj) - allowed) if isinstance(obj, dict) else []
        if extra:
            raise JWTConfigError(f'{path}{where}: unknown field "{extra[0]}"')
    issuer = j.get("issuer") or {}
    url = issuer.get("url") or ""
    if not url:
        raise JWTConfigError(f"{path}.issuer.url: Required value: URL is required")
    _https(f"{path}.issuer.url", url)
    if url in seen:
        raise JWTConfigError(f'{path}.issuer.url: Duplicate value: "{url}"')
    seen.add(url)
    discovery = issuer.get("discoveryURL") or ""
    if discovery:
        _https(f"{path}.issuer.discoveryURL", discovery)
    audiences = issuer.get("audiences") or []
    if not audiences or not all(isinstance(a, str) and a for a in audiences):
        raise JWTConfigError(
            f"{path}.issuer.audiences: Required value: at least one {path}.issuer.audiences is required"
        )
    policy = issuer.get("audienceMatchPolicy") or ""
    if len(audiences) > 1 and policy != "MatchAny":
        raise JWTConfigError(
            f'{path}.issuer.audienceMatchPolicy: Invalid value: "{policy}": audienceMatchPolicy must be MatchAny for '
            "multiple audiences"
        )
    required, claim_rules = _claim_rules(f"{path}.claimValidationRules", j.get("claimValidationRules"))
    mp = f"{path}.claimMappings"
    mappings = _object(mp, j.get("claimMappings"))
    user_claim, user_prefix, user_expr = _prefixed_claim_or_expression(
        f"{mp}.username", _object(f"{mp}.username", mappings.get("username")), True
    )
    groups_claim, groups_prefix, groups_expr = _prefixed_claim_or_expression(
        f"{mp}.groups", _object(f"{mp}.groups", mappings.get("groups")), False
    )
    uid = _object(f"{mp}.uid", mappings.get("uid"))
    if uid.get("claim") and uid.get("expression"):
        raise JWTConfigError(f'{mp}.uid: Invalid value: "": claim and expression can\'t both be set')
    uid_expr = _compile(CLAIMS_ENV, f"{mp}.uid.expression", uid["expression"]) if uid.get("expression") else None
    extra_mappings = _extra(f"{mp}.extra", mappings.get("extra"))
    if user_expr is not None and uses_claim(user_expr.expression, "email"):
        others = [user_expr.expression, *(e.program.expression for e in extra_mappings)]
        others += [r.program.expression for r in claim_rules]
        if not any(uses_claim(e, "email_verified") for e in others):
            raise JWTConfigError(
                f'{mp}.username.expression: Invalid value: "{user_expr.expression}": {_EMAIL_VERIFIED_REQUIRED}'
            )
    return JWTIssuer(
        url=url,
        audiences=tuple(audiences),
        discovery_url=discovery,
        ca_pem=issuer.get("certificateAuthority") or "",
        username_claim=user_claim,
        username_prefix=user_prefix or "",
        groups_claim=groups_claim,
        groups_prefix=groups_prefix or "",
        uid_claim=uid.get("claim") or "",
        required_claims=required,
        # kube accepts every asymmetric algorithm for structured issuers
        signing_algs=SUPPORTED_SIGNING_ALGS,
        username_expression=user_expr,
        groups_expression=groups_expr,
        uid_expression=uid_expr,
        extra=extra_mappings,
        claim_rules=claim_rules,
        user_rules=_user_rules(f"{path}.userValidationRules", j.get("userValidationRules")),
    )


def issuers_from_authentication_config(path: Path, oidc_flags: Sequence[str] = ()) -> list[JWTIssuer]:
    """The `jwt` issuers of the AuthenticationConfiguration at `path`. `oidc_flags`: the --oidc-* flags also given."""
    if oidc_flags:
        raise JWTConfigError(
            "--authentication-config: authentication-config file and oidc-* flags are mutually exclusive"
        )
    try:
        doc = load_yaml(path.read_bytes())
    except OSError as e:
        raise JWTConfigError(f"--authentication-config: failed to read file {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise JWTConfigError(f"--authentication-config: failed to decode file {path}: {e}") from None
    if (
        not isinstance(doc, dict)
        or doc.get("kind") != "AuthenticationConfiguration"
        or (doc.get("apiVersion") not in _API_VERSIONS)
    ):
        raise JWTConfigError(
            f"--authentication-config: {path}: want kind AuthenticationConfiguration, apiVersion "
            "apiserver.config.k8s.io/v1beta1"
        )
    unknown = sorted(set(doc) - {"apiVersion", "kind", "jwt", "anonymous"})
    if unknown:
        raise JWTConfigError(f'--authentication-config: {path}: unknown field "{unknown[0]}"')
    if doc.get("anonymous") is not None:
        raise JWTConfigError(
            f"--authentication-config: {path}: anonymous: Invalid value: anonymous authentication is configured with "
            "--anonymous-auth in this kube-apiserver, not in the AuthenticationConfiguration"
        )
    seen: set[str] = set()
    try:
        return [_jwt(f"jwt[{i}]", j, seen) for i, j in enumerate(doc.get("jwt") or [])]
    except JWTConfigError as e:
        raise JWTConfigError(f"--authentication-config: {path}: {e}") from None
