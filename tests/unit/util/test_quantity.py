"""Resource quantities: apimachinery's grammar, and the same values as lightkube's parser where both accept the text."""

from __future__ import annotations

from decimal import Decimal

import pytest
from lightkube.utils.quantity import parse_quantity as lightkube_parse

from pykubeadm.util.quantity import parse_quantity

CASES = {
    "1": "1",
    "0": "0",
    "250m": "0.25",
    "1.5": "1.5",
    "0.1": "0.1",
    ".5": "0.5",
    "1Ki": "1024",
    "1Mi": "1048576",
    "1.5Gi": "1610612736",
    "2Ei": str(2 * 1024**6),
    "1k": "1000",
    "2M": "2000000",
    "3G": "3e9",
    "1T": "1e12",
    "1P": "1e15",
    "1E": "1e18",
    "1e3": "1000",
    "1E3": "1000",
    "5e-1": "0.5",
    "-1": "-1",
    "+2": "2",
    "1n": "0.001",
    "1u": "0.001",
    "1500u": "0.002",
    "100n": "0.001",
}


@pytest.mark.parametrize(("text", "value"), CASES.items())
def test_values(text: str, value: str) -> None:
    assert parse_quantity(text) == Decimal(value)


@pytest.mark.parametrize(
    "text", [t for t in CASES if not t.endswith(("n", "u")) and "E3" not in t]
)  # lightkube lacks these
def test_agrees_with_lightkube(text: str) -> None:
    assert parse_quantity(text) == lightkube_parse(text)


@pytest.mark.parametrize("text", ["", "abc", "1Kb", "1 Gi", " 1", "1 ", "Gi", "1.2.3", "1e", "1ee3", "--1", "1Zi"])
def test_bad_quantities_name_the_text(text: str) -> None:
    with pytest.raises(ValueError, match="quantit"):
        parse_quantity(text)
