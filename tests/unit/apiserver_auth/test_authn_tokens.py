"""Bearer tokens: header parsing, bootstrap-token Secrets (every rejection rule), and the static token file."""

from __future__ import annotations

import datetime as dt
import logging

import pytest

from pykubeadm.apiserver.authn.bootstrap import BootstrapTokenAuthenticator
from pykubeadm.apiserver.authn.tokenfile import StaticTokenAuthenticator, TokenFileError, parse_token_file
from pykubeadm.apiserver.authn.union import bearer_token, request_authenticator
from pykubeadm.apiserver.authn.user import AuthenticationError, AuthRequest
from pykubeadm.apiserver.objects import DictObjectSource
from tests.unit.apiserver_auth.helpers import BOOTSTRAP_TOKEN, NOW, token_secret


def bearer(token: str) -> AuthRequest:
    return AuthRequest({"Authorization": f"Bearer {token}"})


@pytest.mark.parametrize(
    "header,token",
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER abc extra", "abc"),
        ("  Bearer abc  ", "abc"),
        ("Bearer", None),
        ("Bearer ", None),
        ("Basic dXNlcjpwYXNz", None),
        ("", None),
    ],
)
def test_bearer_header_parsing(header, token):
    assert bearer_token(AuthRequest({"Authorization": header})) == token


def _source(secret: dict) -> DictObjectSource:
    src = DictObjectSource()
    src.put("secrets", secret)
    return src


def _authn(secret: dict):
    return request_authenticator(tokens=[BootstrapTokenAuthenticator(_source(secret))])


async def test_bootstrap_token_user_and_sorted_groups():
    secret = token_secret(groups="system:bootstrappers:zz,system:bootstrappers:aa,system:bootstrappers:zz")
    user = await _authn(secret)(bearer(BOOTSTRAP_TOKEN))
    assert user.name == "system:bootstrap:abcdef"
    assert user.groups == (
        "system:bootstrappers",
        "system:bootstrappers:aa",
        "system:bootstrappers:zz",
        "system:authenticated",
    )


async def test_bootstrap_token_without_expiration_never_expires():
    user = await _authn(token_secret(expiration=""))(bearer(BOOTSTRAP_TOKEN))
    assert user.name == "system:bootstrap:abcdef"


PAST = (NOW - dt.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    "secret,token",
    [
        (token_secret(), "abcdef.0123456789abcdeX"),  # wrong secret (same length)
        (token_secret(), "abcdef.0123456789abcde"),  # wrong length: not a bootstrap token at all
        (token_secret(), "ABCDEF.0123456789ABCDEF"),  # upper case fails the format
        (token_secret(), "abcdeg.0123456789abcdef"),  # no such Secret
        (token_secret(expiration=PAST), BOOTSTRAP_TOKEN),
        (token_secret(expiration="tomorrow"), BOOTSTRAP_TOKEN),  # unparseable = expired
        (token_secret(usages=("signing",)), BOOTSTRAP_TOKEN),
        (token_secret(groups="system:bootstrappers:ok,system:nodes"), BOOTSTRAP_TOKEN),
        (token_secret(groups="system:bootstrappers:a, system:bootstrappers:b"), BOOTSTRAP_TOKEN),  # no trimming
        (token_secret(groups="system:bootstrappers:"), BOOTSTRAP_TOKEN),
        (token_secret(type_="Opaque"), BOOTSTRAP_TOKEN),
        (token_secret(token_id="zzzzzz"), BOOTSTRAP_TOKEN),
        (token_secret(extra_meta={"deletionTimestamp": "2026-01-01T00:00:00Z"}), BOOTSTRAP_TOKEN),
    ],
    ids=[
        "wrong-secret", "short", "uppercase", "missing-secret", "expired", "bad-expiration",
        "no-auth-usage", "foreign-group", "group-with-space", "empty-group-suffix", "wrong-type", "id-mismatch",
        "being-deleted",
    ],
)  # fmt: skip
async def test_bootstrap_token_rejections_are_401(secret, token):
    with pytest.raises(AuthenticationError, match="invalid bearer token"):
        await _authn(secret)(bearer(token))


async def test_bootstrap_token_format_is_anchored_at_both_ends():
    auth = BootstrapTokenAuthenticator(_source(token_secret()))
    assert await auth(BOOTSTRAP_TOKEN + "\n") is None  # re.match + $ would accept a trailing newline
    assert await auth(" " + BOOTSTRAP_TOKEN) is None
    assert (await auth(BOOTSTRAP_TOKEN)).name == "system:bootstrap:abcdef"


async def test_extra_group_must_be_under_system_bootstrappers():
    with pytest.raises(AuthenticationError):
        await _authn(token_secret(groups="system:bootstrappers"))(bearer(BOOTSTRAP_TOKEN))


async def test_usage_value_must_be_exactly_true():
    secret = token_secret(usages=())
    import base64

    secret["data"]["usage-bootstrap-authentication"] = base64.b64encode(b"True").decode()
    with pytest.raises(AuthenticationError):
        await _authn(secret)(bearer(BOOTSTRAP_TOKEN))


async def test_bootstrap_rejection_never_logs_the_secret(caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(AuthenticationError):
        await _authn(token_secret())(bearer("abcdef.ffffffffffffffff"))
    assert "ffffffffffffffff" not in caplog.text and "0123456789abcdef" not in caplog.text


# --- static token file ------------------------------------------------------------------------------------------


def test_token_file_format_from_the_tls_bootstrapping_page():
    text = (
        "# comment line\n"
        "\n"
        '02b50b05283e98dd0fd71db496ef01e8,kubelet-bootstrap,10001,"system:bootstrappers"\n'
        'tok2,alice,20002,"group1,group2",ignored-extra-column\n'
        "tok3,bob,30003\n"
        '"tok4","say ""hi""",4\n'
    )
    entries = dict(parse_token_file(text))
    assert entries["02b50b05283e98dd0fd71db496ef01e8"].name == "kubelet-bootstrap"
    assert entries["02b50b05283e98dd0fd71db496ef01e8"].uid == "10001"
    assert entries["02b50b05283e98dd0fd71db496ef01e8"].groups == ("system:bootstrappers",)
    assert entries["tok2"].groups == ("group1", "group2")
    assert entries["tok3"].groups == ()
    assert entries["tok4"].name == 'say "hi"'


@pytest.mark.parametrize(
    "text,line,detail",
    [
        ("tok,user\n", 1, "must have at least 3 columns (token, user name, user uid), found 2"),
        ("# c\n\ntok,user,1\nonly-token\n", 4, "found 1"),
        ('tok,user,1,"unterminated\n', 1, ""),
        ('tok,us"er,1\n', 1, 'bare " in non-quoted-field'),
        ('tok,"user"x,1\n', 1, 'extraneous or missing " in quoted-field'),
    ],
)
def test_malformed_token_file_names_the_line(text, line, detail):
    with pytest.raises(TokenFileError) as err:
        parse_token_file(text, "/etc/kubernetes/tokens.csv")
    assert f"token file '/etc/kubernetes/tokens.csv' line {line}:" in str(err.value)
    assert detail in str(err.value)


def test_empty_token_is_skipped_and_duplicates_keep_the_last():
    entries = parse_token_file(",nobody,1\ntok,first,1\ntok,second,2\n")
    assert [(t, u.name) for t, u in entries] == [("tok", "second")]


async def test_static_token_authenticates_exact_token_only(pki_dir):
    auth = StaticTokenAuthenticator.from_file(pki_dir / "tokens.csv")
    authn = request_authenticator(tokens=[auth])
    user = await authn(bearer("02b50b05283e98dd0fd71db496ef01e8"))
    assert user.name == "kubelet-bootstrap"
    assert user.groups == ("system:bootstrappers", "system:authenticated")
    for bad in ("02b50b05283e98dd0fd71db496ef01e", "02B50B05283E98DD0FD71DB496EF01E8", "x"):
        with pytest.raises(AuthenticationError):
            await authn(bearer(bad))


async def test_token_order_static_then_bootstrap(pki_dir, source):
    static = StaticTokenAuthenticator.from_file(pki_dir / "tokens.csv")
    authn = request_authenticator(tokens=[static, BootstrapTokenAuthenticator(source)])
    assert (await authn(bearer(BOOTSTRAP_TOKEN))).name == "system:bootstrap:abcdef"
    assert (await authn(bearer("02b50b05283e98dd0fd71db496ef01e8"))).name == "kubelet-bootstrap"
