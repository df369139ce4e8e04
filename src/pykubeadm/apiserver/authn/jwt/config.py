"""The JWT issuers the apiserver trusts, from the legacy --oidc-* flags or an AuthenticationConfiguration file
(`apiserver.config.k8s.io/v1beta1`, `--authentication-config`), validated with kube's field paths.

kube's defaults for the flags: the username claim is `sub`; without --oidc-username-prefix the username is prefixed
with `<issuer URL>#` unless the claim is `email` (then not at all); `-` turns prefixing off. CEL expressions
(`claimValidationRules[].expression`, `claimMappings.*.expression`, `userValidationRules`, `extra`) need a CEL
engine this apiserver does not have yet: they are refused at start-up, naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

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
_NO_CEL = "CEL expressions are not supported yet by this kube-apiserver; use claim"
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


def _claim_mapping(path: str, m: Any, required: bool) -> tuple[str, str | None]:
    if m is None:
        if required:
            raise JWTConfigError(f"{path}: Required value: claim or expression is required")
        return "", None
    if not isinstance(m, dict):
        raise JWTConfigError(f"{path}: Invalid value: want an object")
    if m.get("expression"):
        raise JWTConfigError(f'{path}.expression: Invalid value: "{m["expression"]}": {_NO_CEL}')
    claim = m.get("claim") or ""
    if required and not claim:
        raise JWTConfigError(f"{path}: Required value: claim or expression is required")
    prefix = m.get("prefix")
    return claim, prefix


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
    required: dict[str, str] = {}
    for i, rule in enumerate(j.get("claimValidationRules") or []):
        rp = f"{path}.claimValidationRules[{i}]"
        if rule.get("expression"):
            raise JWTConfigError(f'{rp}.expression: Invalid value: "{rule["expression"]}": {_NO_CEL} and requiredValue')
        if not rule.get("claim"):
            raise JWTConfigError(f"{rp}.claim: Required value: claim or expression is required")
        required[rule["claim"]] = str(rule.get("requiredValue") or "")
    for i, rule in enumerate(j.get("userValidationRules") or []):
        raise JWTConfigError(
            f'{path}.userValidationRules[{i}].expression: Invalid value: "{rule.get("expression", "")}": '
            "CEL expressions are not supported yet by this kube-apiserver"
        )
    mappings = j.get("claimMappings") or {}
    user_claim, user_prefix = _claim_mapping(f"{path}.claimMappings.username", mappings.get("username"), True)
    if user_prefix is None:
        raise JWTConfigError(
            f"{path}.claimMappings.username.prefix: Required value: prefix is required when claim is set. It can be set "
            "to an empty string to disable prefixing"
        )
    groups_claim, groups_prefix = _claim_mapping(f"{path}.claimMappings.groups", mappings.get("groups"), False)
    if groups_claim and groups_prefix is None:
        raise JWTConfigError(
            f"{path}.claimMappings.groups.prefix: Required value: prefix is required when claim is set. It can be set "
            "to an empty string to disable prefixing"
        )
    uid_claim, _ = _claim_mapping(f"{path}.claimMappings.uid", mappings.get("uid"), False)
    if mappings.get("extra"):
        raise JWTConfigError(
            f"{path}.claimMappings.extra: Invalid value: extra mappings are CEL expressions, which are not supported "
            "yet by this kube-apiserver"
        )
    return JWTIssuer(
        url=url,
        audiences=tuple(audiences),
        discovery_url=discovery,
        ca_pem=issuer.get("certificateAuthority") or "",
        username_claim=user_claim,
        username_prefix=user_prefix,
        groups_claim=groups_claim,
        groups_prefix=groups_prefix or "",
        uid_claim=uid_claim,
        required_claims=required,
        # kube accepts every asymmetric algorithm for structured issuers
        signing_algs=SUPPORTED_SIGNING_ALGS,
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
