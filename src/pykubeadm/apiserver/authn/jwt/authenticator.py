"""One trusted JWT issuer as a bearer-token authenticator: OpenID Connect discovery and the JWKS fetched from the
issuer (over TLS verified with its CA), tokens verified with PyJWT, claims mapped to a user as kube-apiserver does.

A token whose unverified `iss` is not this issuer is not ours (the next authenticator tries it). For ours: the
signing algorithm must be allowed, the key is the JWKS key with the token's `kid` (an unknown `kid` re-fetches the
JWKS, at most every REFRESH_MIN_SECONDS, as go-oidc's remote key set does, so a rotated issuer key is picked up);
`exp` is required and checked without leeway, `aud` must hold one of the audiences, `iss` must match. Any failure is
AuthenticationError (401) naming what failed; a token is never logged.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from typing import Any

import aiohttp
import jwt

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
        """Map verified claims to the user (username, groups, uid), after the required claims."""
        iss = self.issuer
        for name, want in iss.required_claims.items():
            if name not in claims:
                raise AuthenticationError(f"oidc: required claim {name} not present in ID token")
            if claims[name] != want:
                raise AuthenticationError(
                    f"oidc: required claim {name} value does not match. Got = {claims[name]}, want = {want}"
                )
        value = claims.get(iss.username_claim)
        if value is None:
            raise AuthenticationError(f"oidc: parse username claims {iss.username_claim!r}: claim not present")
        if not isinstance(value, str):
            raise AuthenticationError(f"oidc: parse username claims {iss.username_claim!r}: claim is not a string")
        if iss.username_claim == "email" and claims.get("email_verified", True) is not True:
            raise AuthenticationError("oidc: email not verified")
        groups: list[str] = []
        if iss.groups_claim and iss.groups_claim in claims:
            raw = claims[iss.groups_claim]
            if isinstance(raw, str):
                raw = [raw]
            if not isinstance(raw, list) or not all(isinstance(g, str) for g in raw):
                raise AuthenticationError(
                    f"oidc: parse groups claim {iss.groups_claim!r}: not a string or list of strings"
                )
            groups = [iss.groups_prefix + g for g in raw]
        uid = ""
        if iss.uid_claim:
            raw_uid = claims.get(iss.uid_claim)
            if not isinstance(raw_uid, str):
                raise AuthenticationError(f"oidc: parse uid claim {iss.uid_claim!r}: claim not present or not a string")
            uid = raw_uid
        return UserInfo(name=iss.username_prefix + value, uid=uid, groups=tuple(groups))
