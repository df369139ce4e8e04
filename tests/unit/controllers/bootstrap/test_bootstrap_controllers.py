"""bootstrapsigner's signature set and tokencleaner's decisions over real Secret dicts."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

from pykubeadm.bootstrap.jws import compute_detached_signature, detached_token_is_valid
from pykubeadm.controllers.bootstrap.bootstrapsigner import signed_data, signing_tokens
from pykubeadm.controllers.bootstrap.tokencleaner import token_cleanup

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
KUBECONFIG = 'apiVersion: v1\nclusters:\n- cluster:\n    server: https://127.0.0.1:6443\n  name: ""\n'


def rfc3339(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def secret(
    token_id: str = "abcdef",
    token_secret: str = "0123456789abcdef",
    *,
    name: str | None = None,
    expiration: str | None = None,
    signing: str | None = "true",
    type_: str = "bootstrap.kubernetes.io/token",
    data_token_id: str | None = None,
) -> dict:
    data = {
        "token-id": data_token_id if data_token_id is not None else token_id,
        "token-secret": token_secret,
        "usage-bootstrap-authentication": "true",
    }
    if signing is not None:
        data["usage-bootstrap-signing"] = signing
    if expiration is not None:
        data["expiration"] = expiration
    return {
        "metadata": {"name": name or f"bootstrap-token-{token_id}", "namespace": "kube-system", "uid": "u1"},
        "type": type_,
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def test_eligible_tokens_and_next_expiry() -> None:
    soon = NOW + timedelta(minutes=5)
    later = NOW + timedelta(hours=5)
    secrets = [
        secret("aaaaaa", expiration=rfc3339(later)),
        secret("bbbbbb", expiration=rfc3339(soon)),
        secret("cccccc"),  # never expires
        secret("dddddd", expiration=rfc3339(NOW - timedelta(seconds=1))),  # expired
        secret("eeeeee", expiration="tomorrow"),  # unparseable → expired
        secret("ffffff", signing=None),
        secret("gggggg", signing="True"),  # only the exact string "true" counts
        secret("hhhhhh", type_="Opaque"),
        secret("iiiiii", name="bootstrap-token-zzzzzz"),  # id mismatch with the name
        secret("jjjjjj", name="not-a-token"),
        secret("kkkkkk", token_secret=""),
    ]
    tokens, next_expiry = signing_tokens(secrets, NOW)
    assert sorted(tokens) == ["aaaaaa", "bbbbbb", "cccccc"]
    assert tokens["cccccc"] == b"0123456789abcdef"
    assert next_expiry == soon


def test_signed_data_adds_signatures_that_verify_with_the_token_secret() -> None:
    data = {"kubeconfig": KUBECONFIG}
    new = signed_data(data, {"abcdef": b"0123456789abcdef"})
    assert new is not None
    assert set(new) == {"kubeconfig", "jws-kubeconfig-abcdef"}
    assert detached_token_is_valid(new["jws-kubeconfig-abcdef"], KUBECONFIG, "abcdef", "0123456789abcdef")


def test_signed_data_removes_stale_and_is_none_when_unchanged() -> None:
    good = compute_detached_signature(KUBECONFIG, "abcdef", "0123456789abcdef")
    data = {"kubeconfig": KUBECONFIG, "jws-kubeconfig-abcdef": good, "jws-kubeconfig-old123": "x..y"}
    assert signed_data(data, {"abcdef": b"0123456789abcdef"}) == {
        "kubeconfig": KUBECONFIG,
        "jws-kubeconfig-abcdef": good,
    }
    assert (
        signed_data({"kubeconfig": KUBECONFIG, "jws-kubeconfig-abcdef": good}, {"abcdef": b"0123456789abcdef"}) is None
    )
    # a wrong signature is replaced
    assert signed_data({"kubeconfig": KUBECONFIG, "jws-kubeconfig-abcdef": "bad"}, {"abcdef": b"0123456789abcdef"}) == {
        "kubeconfig": KUBECONFIG,
        "jws-kubeconfig-abcdef": good,
    }
    # no kubeconfig key: nothing to sign
    assert signed_data({"other": "x"}, {"abcdef": b"0123456789abcdef"}) is None


def test_duplicate_token_ids_first_wins() -> None:
    tokens, _ = signing_tokens(
        [secret("abcdef", "1111111111111111"), secret("abcdef", "2222222222222222", name="bootstrap-token-abcdef")], NOW
    )
    assert tokens == {"abcdef": b"1111111111111111"}


def test_tokencleaner_decisions() -> None:
    assert token_cleanup(secret(expiration=rfc3339(NOW - timedelta(seconds=1))), NOW) == 0.0
    assert token_cleanup(secret(expiration=rfc3339(NOW)), NOW) == 0.0
    assert token_cleanup(secret(expiration="garbage"), NOW) == 0.0
    assert token_cleanup(secret(expiration=rfc3339(NOW + timedelta(seconds=90))), NOW) == 90.0
    assert token_cleanup(secret(), NOW) is None
    assert token_cleanup(secret(expiration=rfc3339(NOW - timedelta(days=1)), type_="Opaque"), NOW) is None
