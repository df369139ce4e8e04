"""Authentication costs a request only what its credentials need: a client certificate without front-proxy identity
headers is not checked against the front-proxy CA (the x509 authenticator judges it)."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict

from pykubeadm.apiserver.authn.config import build_auth
from pykubeadm.apiserver.authn.requestheader import RequestHeaderAuthenticator
from pykubeadm.apiserver.authn.user import AuthenticationError, AuthRequest
from tests.unit.apiserver_auth.helpers import kubeadm_flags


async def test_a_certificate_without_identity_headers_is_left_to_the_x509_authenticator(pki_dir, source, client_ca):
    cfg = build_auth(kubeadm_flags(pki_dir), source)
    front = next(a for a in _walk(cfg.authenticator) if isinstance(a, RequestHeaderAuthenticator))
    cert = client_ca.issue("system:node:node-a", ("system:nodes",))
    # No X-Remote-User: no identity is asserted, so the front-proxy chain check is skipped (no error to collect).
    assert await front(AuthRequest(CIMultiDict(), (cert,))) is None
    with pytest.raises(AuthenticationError):
        await front(
            AuthRequest(CIMultiDict({"X-Remote-User": "alice"}), (cert,))
        )  # asserted by a non-front-proxy certificate: refused


def _walk(fn, seen=None):
    """Every callable reachable through closures from the request authenticator."""
    seen = seen if seen is not None else set()
    if id(fn) in seen:
        return
    seen.add(id(fn))
    yield fn
    for cell in getattr(fn, "__closure__", None) or ():
        value = cell.cell_contents
        for item in value if isinstance(value, list | tuple) else (value,):
            if callable(item):
                yield from _walk(item, seen)
