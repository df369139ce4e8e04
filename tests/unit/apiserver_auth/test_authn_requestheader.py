"""Front-proxy request headers: trusted only with a client cert from --requestheader-client-ca-file and an allowed CN."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict

from pykubeadm.apiserver.authn.config import build_auth
from pykubeadm.apiserver.authn.user import AuthenticationError, AuthRequest
from tests.unit.apiserver_auth.helpers import kubeadm_flags


@pytest.fixture
def authn(pki_dir, source):
    return build_auth(kubeadm_flags(pki_dir), source).authenticator


def headers(**extra) -> CIMultiDict:
    h = CIMultiDict()
    h.add("X-Remote-User", "alice")
    h.add("X-Remote-Group", "devs")
    h.add("x-remote-group", "ops,qa")
    h.add("X-Remote-Extra-Scopes", "openid")
    h.add("X-Remote-Extra-Scopes", "profile")
    h.add("X-Remote-Extra-Acme.com%2Fproject", "p1")
    for k, v in extra.items():
        h.add(k, v)
    return h


async def test_trusted_proxy_headers_become_the_user(authn, front_proxy_ca):
    proxy = front_proxy_ca.issue("front-proxy-client")
    user = await authn(AuthRequest(headers(), (proxy,)))
    assert user.name == "alice"
    assert user.groups == ("devs", "ops,qa", "system:authenticated")  # one group per header value, no comma split
    assert user.extra == {"scopes": ("openid", "profile"), "acme.com/project": ("p1",)}


async def test_proxy_cn_not_in_allowed_names_is_401(authn, front_proxy_ca):
    rogue = front_proxy_ca.issue("someone-else")
    with pytest.raises(AuthenticationError):
        await authn(AuthRequest(headers(), (rogue,)))


async def test_headers_from_an_ordinary_client_cert_are_ignored(authn, client_ca):
    cert = client_ca.issue("system:node:node-a", ("system:nodes",))
    user = await authn(AuthRequest(headers(), (cert,)))
    assert user.name == "system:node:node-a"  # the certificate, not X-Remote-User


async def test_headers_without_certificate_are_ignored(authn):
    user = await authn(AuthRequest(headers()))
    assert user.name == "system:anonymous"


async def test_proxy_cert_without_user_header_is_not_a_client_identity(authn, front_proxy_ca):
    proxy = front_proxy_ca.issue("front-proxy-client")
    with pytest.raises(AuthenticationError):  # not valid under --client-ca-file either
        await authn(AuthRequest(CIMultiDict(), (proxy,)))


async def test_empty_allowed_names_accepts_any_cn(pki_dir, source, front_proxy_ca):
    flags = kubeadm_flags(pki_dir)
    flags["requestheader-allowed-names"] = ""
    authn = build_auth(flags, source).authenticator
    user = await authn(AuthRequest(headers(), (front_proxy_ca.issue("any-proxy"),)))
    assert user.name == "alice"


async def test_plain_dict_headers_work_too(authn, front_proxy_ca):
    user = await authn(AuthRequest({"x-remote-user": "bob"}, (front_proxy_ca.issue("front-proxy-client"),)))
    assert (user.name, user.groups) == ("bob", ("system:authenticated",))
