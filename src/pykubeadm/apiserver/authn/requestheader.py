"""Front-proxy (request header) authenticator: --requestheader-* flags; X-Remote-User/Group/Extra-* from a trusted proxy.

The headers are believed only when the TLS client certificate verifies against --requestheader-client-ca-file and
(if --requestheader-allowed-names is non-empty) its CN is one of the allowed names. Headers are looked up
case-insensitively; repeated group headers each add one group (values are not split on commas).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from cryptography import x509
from cryptography.x509.oid import NameOID

from pykubeadm.apiserver.authn.user import AuthenticationError, AuthRequest, UserInfo
from pykubeadm.apiserver.authn.x509 import verify_client_chain

__all__ = ["RequestHeaderAuthenticator", "RequestHeaderConfig", "header_values"]


@dataclass(frozen=True)
class RequestHeaderConfig:
    client_ca: tuple[x509.Certificate, ...]
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = ("X-Remote-User",)
    uid_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = ("X-Remote-Group",)
    extra_header_prefixes: tuple[str, ...] = ("X-Remote-Extra-",)


def header_values(headers: Mapping[str, str], name: str) -> list[str]:
    """Every value of header `name` (case-insensitive); uses `getall` of multi-dicts (aiohttp) when available."""
    getall = getattr(headers, "getall", None)
    if getall is not None:
        return [str(v) for v in getall(name, [])]
    lname = name.lower()
    return [v for k, v in headers.items() if k.lower() == lname]


def _all_header_names(headers: Mapping[str, str]) -> list[str]:
    """Header names, one per case-insensitive name."""
    return list({k.lower(): k for k in headers}.values())


class RequestHeaderAuthenticator:
    """An Authenticator that trusts identity headers only from an authenticated front proxy."""

    def __init__(self, config: RequestHeaderConfig):
        self._cfg = config

    async def __call__(self, req: AuthRequest) -> UserInfo | None:
        if not req.peer_chain:
            return None
        if not any(header_values(req.headers, h) for h in self._cfg.username_headers):
            return None  # no identity asserted: skip the chain check (the x509 authenticator judges the cert)
        verify_client_chain(req.peer_chain, self._cfg.client_ca)
        if self._cfg.allowed_names:
            cns = req.peer_chain[0].subject.get_attributes_for_oid(NameOID.COMMON_NAME)
            cn = str(cns[0].value) if cns else ""
            if cn not in self._cfg.allowed_names:
                raise AuthenticationError(
                    f"x509: subject with cn={cn} is not in the allowed list: [{' '.join(self._cfg.allowed_names)}]"
                )
        name = ""
        for header in self._cfg.username_headers:
            values = header_values(req.headers, header)
            if values and values[0]:
                name = values[0]
                break
        if not name:
            return None
        uid = ""
        for header in self._cfg.uid_headers:
            values = header_values(req.headers, header)
            if values and values[0]:
                uid = values[0]
                break
        groups: list[str] = []
        for header in self._cfg.group_headers:
            groups.extend(header_values(req.headers, header))
        extra: dict[str, tuple[str, ...]] = {}
        for prefix in self._cfg.extra_header_prefixes:
            lprefix = prefix.lower()
            for header in _all_header_names(req.headers):
                if header.lower().startswith(lprefix) and len(header) > len(prefix):
                    key = unquote(header[len(prefix) :].lower())
                    extra[key] = extra.get(key, ()) + tuple(header_values(req.headers, header))
        return UserInfo(name=name, uid=uid, groups=tuple(groups), extra=extra)
