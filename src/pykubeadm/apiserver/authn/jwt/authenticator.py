"""One trusted JWT issuer as a bearer-token authenticator: OpenID Connect discovery and the JWKS fetched from the
issuer (over TLS verified with its CA), tokens verified with PyJWT, claims mapped to a user as kube-apiserver does.

A token whose unverified `iss` is not this issuer is not ours (the next authenticator tries it). For ours: the
signing algorithm must be allowed, the key is the JWKS key with the token's `kid` (an unknown `kid` re-fetches the
JWKS, at most every REFRESH_MIN_SECONDS, as go-oidc's remote key set does, so a rotated issuer key is picked up);
`exp` is required and checked without leeway, `aud` must hold one of the audiences, `iss` must match. The verified
claims become the user through the issuer's claims or CEL expressions, then pass its validation rules. Any failure
is AuthenticationError (401) naming what failed; a token is never logged.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from typing import Any

import aiohttp
import jwt

from pykubeadm.apiserver.authn.jwt.cel import check_rules, evaluate, string_list
from pykubeadm.apiserver.authn.jwt.config import JWTIssuer
from pykubeadm.apiserver.authn.user import AuthenticationError, UserInfo

__all__ = ["REFRESH_MIN_SECONDS", "JWTAuthenticator"]

#: The shortest time between two JWKS fetches triggered by unknown key IDs.
REFRESH_MIN_SECONDS = 5.0
_FETCH_TIMEOUT = 10.0


class JWTAuthenticator:
    def __init__(self, issuer: JWTIssuer):
        self.issuer = issuer
        self._ssl = ssl.create_default_context(cadata=issuer.ca_pem or None)  # no CA: the system's roots
        self._keys: list[jwt.PyJWK] = []
        self._fetched = 0.0
        self._lock: asyncio.Lock | None = None

    # --- keys -----------------------------------------------------------------------------------------------------

    async def _get_json(self, session: aiohttp.ClientSession, url: str) -> Any:
        async with session.get(url, ssl=self._ssl) as r:
            if r.status != 200:
                raise AuthenticationError(f"oidc: get {url}: {r.status} {r.reason}")
            return await r.json(content_type=None)

    async def _fetch(self) -> None:
        iss = self.issuer
        discovery = iss.discovery_url or iss.url.rstrip("/") + "/.well-known/openid-configuration"
        timeout = aiohttp.ClientTimeout(total=_FETCH_TIMEOUT)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            doc = await self._get_json(session, discovery)
            if not isinstance(doc, dict) or doc.get("issuer") != iss.url:
                got = doc.get("issuer") if isinstance(doc, dict) else None
                raise AuthenticationError(
                    f'oidc: issuer did not match the issuer returned by provider, expected "{iss.url}" got "{got}"'
                )
            jwks_uri = doc.get("jwks_uri")
            if not isinstance(jwks_uri, str) or not jwks_uri:
                raise AuthenticationError(f"oidc: the discovery document of {iss.url} has no jwks_uri")
            jwks = await self._get_json(session, jwks_uri)
        keys = []
        for k in (jwks or {}).get("keys") or []:
            if not isinstance(k, dict) or k.get("use", "sig") != "sig":
                continue
            try:
                keys.append(jwt.PyJWK(k))
            except jwt.PyJWTError:
                continue  # a key type or algorithm we cannot use
        self._keys = keys
        self._fetched = time.monotonic()

    async def _refresh(self, force: bool) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._keys and (not force or time.monotonic() - self._fetched < REFRESH_MIN_SECONDS):
                return
            try:
                await self._fetch()
            except AuthenticationError:
                raise
            except (aiohttp.ClientError, TimeoutError, ValueError, ssl.SSLError) as e:
                raise AuthenticationError(
                    f"oidc: authenticator for issuer {self.issuer.url!r} is not initialized: {type(e).__name__}: {e}"
                ) from None

    async def _candidates(self, kid: str | None) -> list[jwt.PyJWK]:
        await self._refresh(force=False)
        match = [k for k in self._keys if kid is None or k.key_id == kid]
        if not match and kid is not None:
            await self._refresh(force=True)  # the issuer may have rotated its keys
            match = [k for k in self._keys if k.key_id == kid]
        return match

    # --- tokens ---------------------------------------------------------------------------------------------------

    async def __call__(self, token: str) -> UserInfo | None:
        try:
            unverified = jwt.decode(token, options={"verify_signature": False})
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None  # not a JWT: not ours
        if not isinstance(unverified, dict) or unverified.get("iss") != self.issuer.url:
            return None
        alg = header.get("alg")
        if alg not in self.issuer.signing_algs:
            raise AuthenticationError(
                f"oidc: verify token: oidc: id token signed with unsupported algorithm, expected "
                f"{list(self.issuer.signing_algs)} got {alg!r}"
            )
        kid = header.get("kid")
        keys = await self._candidates(kid if isinstance(kid, str) else None)
        if not keys:
            raise AuthenticationError("oidc: verify token: failed to verify signature: no key matches the token's kid")
        claims: dict[str, Any] | None = None
        for key in keys:
            try:
                claims = jwt.decode(
                    token,
                    key.key,
                    algorithms=[alg],
                    audience=list(self.issuer.audiences),
                    issuer=self.issuer.url,
                    options={"require": ["exp", "iss", "aud"]},
                )
                break
            except jwt.InvalidSignatureError:
                continue
            except jwt.ExpiredSignatureError:
                raise AuthenticationError("oidc: verify token: oidc: token is expired") from None
            except jwt.InvalidAudienceError:
                raise AuthenticationError(
                    f"oidc: verify token: oidc: expected audience in {list(self.issuer.audiences)}"
                ) from None
            except jwt.PyJWTError as e:
                raise AuthenticationError(f"oidc: verify token: {e}") from None
        if claims is None:
            raise AuthenticationError("oidc: verify token: failed to verify signature")
        return self.user(claims)

    def user(self, claims: dict[str, Any]) -> UserInfo:
        """Map verified claims to the user in kube's order: username, groups, uid and extra (claims or CEL), then the
        required claims, the claim validation rules, and the user validation rules over the mapped user."""
        try:
            return self._user(claims)
        except ValueError as e:
            raise AuthenticationError(str(e)) from None

    def _user(self, claims: dict[str, Any]) -> UserInfo:
        iss = self.issuer
        variables = {"claims": claims}
        info = UserInfo(
            name=self._username(claims),
            groups=tuple(self._groups(claims)),
            uid=self._uid(claims),
            extra=self._extra(claims),
        )
        for name, want in iss.required_claims.items():
            if name not in claims:
                raise ValueError(f"oidc: required claim {name} not present in ID token")
            if claims[name] != want:
                raise ValueError(
                    f"oidc: required claim {name} value does not match. Got = {claims[name]}, want = {want}"
                )
        check_rules(iss.claim_rules, variables, "claim validation expression")
        if iss.user_rules:
            user = {
                "username": info.name,
                "uid": info.uid,
                "groups": list(info.groups),
                "extra": {k: list(v) for k, v in info.extra.items()},
            }
            check_rules(iss.user_rules, {"user": user}, "user info validation rule")
        return info

    def _extra(self, claims: dict[str, Any]) -> dict[str, tuple[str, ...]]:
        extra: dict[str, tuple[str, ...]] = {}
        for m in self.issuer.extra:
            value = evaluate(m.program, {"claims": claims}, "extra claim expression")
            try:
                values = string_list(value)
            except ValueError as e:
                raise ValueError(
                    f"oidc: error evaluating extra claim expression: {m.program.expression}: {e}"
                ) from None
            if values:
                extra[m.key] = tuple(values)
        return extra

    def _username(self, claims: dict[str, Any]) -> str:
        iss = self.issuer
        if iss.username_expression is not None:
            name = evaluate(iss.username_expression, {"claims": claims}, "username claim expression")
            if not isinstance(name, str):
                raise ValueError(
                    "oidc: error evaluating username claim expression: username claim expression must return a string"
                )
            if not name:
                raise ValueError("oidc: empty username via CEL expression is not allowed")
            return name
        value = claims.get(iss.username_claim)
        if value is None:
            raise ValueError(f"oidc: parse username claims {iss.username_claim!r}: claim not present")
        if not isinstance(value, str):
            raise ValueError(f"oidc: parse username claims {iss.username_claim!r}: claim is not a string")
        if iss.username_claim == "email" and claims.get("email_verified", True) is not True:
            raise ValueError("oidc: email not verified")
        return iss.username_prefix + value

    def _groups(self, claims: dict[str, Any]) -> list[str]:
        iss = self.issuer
        if iss.groups_claim:
            if iss.groups_claim not in claims:
                return []
            raw = claims[iss.groups_claim]
            if isinstance(raw, str):
                raw = [raw]
            if not isinstance(raw, list) or not all(isinstance(g, str) for g in raw):
                raise ValueError(f"oidc: parse groups claim {iss.groups_claim!r}: not a string or list of strings")
            return [iss.groups_prefix + g for g in raw]
        if iss.groups_expression is None:
            return []
        value = evaluate(iss.groups_expression, {"claims": claims}, "group claim expression")
        try:
            return string_list(value)
        except ValueError as e:
            raise ValueError(f"oidc: error evaluating group claim expression: {e}") from None

    def _uid(self, claims: dict[str, Any]) -> str:
        iss = self.issuer
        if iss.uid_claim:
            raw = claims.get(iss.uid_claim)
            if not isinstance(raw, str):
                raise ValueError(f"oidc: parse uid claim {iss.uid_claim!r}: claim not present or not a string")
            return raw
        if iss.uid_expression is None:
            return ""
        uid = evaluate(iss.uid_expression, {"claims": claims}, "uid claim expression")
        if not isinstance(uid, str):
            raise ValueError("oidc: error evaluating uid claim expression: uid claim expression must return a string")
        return uid
