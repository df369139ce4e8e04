"""Detached JWS of cluster-info: the upstream cluster-bootstrap test vectors and tamper checks."""

from __future__ import annotations

import pytest

from pykubeadm.bootstrap.jws import compute_detached_signature, detached_token_is_valid

CONTENT = "Hello from the other side. I must have called a thousand times."


@pytest.mark.parametrize(
    ("content", "secret", "expected"),
    [
        (
            CONTENT,
            "my voice is my passcode",
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8",
        ),
        (
            "",
            "my voice is my passcode",
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk",
        ),
        (CONTENT, "", "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8"),
    ],
)
def test_upstream_vectors(content: str, secret: str, expected: str) -> None:
    assert compute_detached_signature(content, "joshua", secret) == expected
    assert detached_token_is_valid(expected, content, "joshua", secret)


def test_tampering_is_detected() -> None:
    sig = compute_detached_signature(CONTENT, "joshua", "my voice is my passcode")
    assert not detached_token_is_valid(sig, CONTENT + " ", "joshua", "my voice is my passcode")
    assert not detached_token_is_valid(sig, CONTENT, "joshub", "my voice is my passcode")
    assert not detached_token_is_valid(sig, CONTENT, "joshua", "my voice is my passcodf")
    assert not detached_token_is_valid(sig[:-1], CONTENT, "joshua", "my voice is my passcode")


def test_key_is_the_secret_not_the_full_token() -> None:
    assert compute_detached_signature("x", "abcdef", "0123456789abcdef") != compute_detached_signature(
        "x", "abcdef", "abcdef.0123456789abcdef"
    )
