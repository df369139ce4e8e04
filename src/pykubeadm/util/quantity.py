"""Kubernetes resource quantities (`500m`, `1.5Gi`, `2e3`) as decimals, the grammar of apimachinery's resource.Quantity.

`<signedNumber><suffix>` where the suffix is binary SI (Ki … Ei), decimal SI (n, u, m, "", k, M, G, T, P, E) or a
decimal exponent (`e3`, `E-2`); the value is rounded up to a thousandth, as `Quantity.MilliValue` rounds. The kubelet,
scheduler and quota admission parse quantities here rather than through lightkube.utils.quantity, whose package
imports lightkube's whole client (about 60 ms a process start).
"""

from __future__ import annotations

import re
from decimal import ROUND_UP, Decimal, InvalidOperation

__all__ = ["parse_quantity"]

_NUMBER = re.compile(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+))(.*)", re.DOTALL)
_EXPONENT = re.compile(r"[eE]([+-]?\d+)")
_MILLI = Decimal("0.001")
_BINARY_SI = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")  # 1024^1 … 1024^6
_DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}  # powers of 10
_SUFFIXES = {
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(_BINARY_SI)},
    **{s: Decimal(10) ** e for s, e in _DECIMAL_SI.items()},
}


def parse_quantity(quantity: str) -> Decimal:
    """The quantity's value (e.g. "1Ki" → 1024, "250m" → 0.25); ValueError naming the text when it is not one."""
    m = _NUMBER.fullmatch(quantity)
    if m is None:
        raise ValueError(
            f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {quantity!r}"
        )
    number, suffix = m.groups()
    multiplier = _SUFFIXES.get(suffix)
    if multiplier is None:
        exp = _EXPONENT.fullmatch(suffix)
        if exp is None:
            raise ValueError(f"unable to parse quantity's suffix: {quantity!r}")
        multiplier = Decimal(10) ** int(exp.group(1))
    try:
        return (Decimal(number) * multiplier).quantize(_MILLI, rounding=ROUND_UP)
    except InvalidOperation as e:
        raise ValueError(f"quantity is out of range: {quantity!r}") from e
