"""Bootstrap token strings: generation (rejection sampling over [0-9a-z]), parsing, validation."""

from __future__ import annotations

import collections
import re

import pytest

from pykubeadm.bootstrap import token


def test_generate_has_kubeadm_format_and_is_random() -> None:
    seen = {token.generate_token() for _ in range(200)}
    assert len(seen) == 200
    for t in seen:
        assert re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", t)
        assert token.is_valid_token(t)


def test_random_string_uses_the_whole_alphabet_uniformly() -> None:
    counts = collections.Counter(token.random_string(36 * 400))
    assert set(counts) == set("0123456789abcdefghijklmnopqrstuvwxyz")
    # with rejection sampling every char is ~400 times; a biased `b % 36` over all 256 bytes would skew 0-3
    assert max(counts.values()) < 560 and min(counts.values()) > 260


def test_rejection_sampling_discards_high_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = iter([bytes([252, 253, 255, 0, 35, 36]) + bytes(10), bytes(16)])
    monkeypatch.setattr(token.secrets, "token_bytes", lambda n: next(chunks))
    assert token.random_string(3) == "0z0"


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("abcdef.0123456789abcdef", True),
        ("ABCDEF.0123456789abcdef", False),
        ("abcdef.0123456789abcde", False),
        ("abcdef0123456789abcdef", False),
        ("abcdef.0123456789abcdef\n", False),
    ],
)
def test_validation(value: str, ok: bool) -> None:
    assert token.is_valid_token(value) is ok


def test_parse_and_helpers() -> None:
    t = token.parse_token("abcdef.0123456789abcdef")
    assert (t.id, t.secret, str(t)) == ("abcdef", "0123456789abcdef", "abcdef.0123456789abcdef")
    with pytest.raises(ValueError) as e:
        token.parse_token("nope")
    assert str(e.value) == r'the bootstrap token "nope" was not of the form "\A([a-z0-9]{6})\.([a-z0-9]{16})\z"'
    assert token.is_valid_token_id("abcdef") and not token.is_valid_token_id("abcdefg")
    assert token.token_id("abcdef.0123456789abcdef") == "abcdef"
    assert token.secret_name("abcdef.0123456789abcdef") == "bootstrap-token-abcdef"
    assert "0123456789abcdef" not in token.redact("abcdef.0123456789abcdef")
