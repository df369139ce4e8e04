"""Kubernetes' CEL libraries (k8s.io/apiserver/pkg/cel/library) for the engine: lists (`isSorted`, `sum`, `min`,
`max`), regex (`find`, `findAll`), URLs (`url`, `isURL`, `getScheme`, `getHost`, `getHostname`, `getPort`,
`getEscapedPath`, `getQuery`), quantities (`quantity`, `isQuantity`, `sign`, `isInteger`, `asInteger`,
`asApproximateFloat`, `add`, `sub`, `compareTo`, `isLessThan`, `isGreaterThan`) and IP/CIDR (`ip`, `isIP`, `family`,
`isLoopback`, `isUnspecified`, `isGlobalUnicast`, `isLinkLocalUnicast`, `isLinkLocalMulticast`, `cidr`, `isCIDR`,
`containsIP`, `containsCIDR`, `prefixLength`, `masked`).

URL, Quantity, IP and CIDR values are maps carrying their kind under `_KIND`; errors raised here become CEL errors.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cel_expr_python import cel  # type: ignore[import-untyped,unused-ignore]

from pykubeadm.util.quantity import parse_quantity

__all__ = ["declarations"]

_KIND = "__k8s_cel_type__"
S, N, B, D, DYN = cel.Type.STRING, cel.Type.INT, cel.Type.BOOL, cel.Type.DOUBLE, cel.Type.DYN
M = cel.Type.Map(S, DYN)
L = cel.Type.List(DYN)


def _typed(kind: str, value: str) -> dict[str, str]:
    return {_KIND: kind, "v": value}


def _value(obj: Any, kind: str) -> str:
    if not isinstance(obj, dict) or obj.get(_KIND) != kind:
        raise ValueError(f"no such overload: expected {kind}")
    return str(obj["v"])


# --- lists -----------------------------------------------------------------------------------------------------------


def _is_sorted(items: list[Any]) -> bool:
    return all(a <= b for a, b in itertools.pairwise(items))


def _sum(items: list[Any]) -> Any:
    return sum(items) if items else 0


def _min(items: list[Any]) -> Any:
    if not items:
        raise ValueError("min called on empty list")
    return min(items)


def _max(items: list[Any]) -> Any:
    if not items:
        raise ValueError("max called on empty list")
    return max(items)


# --- regex -----------------------------------------------------------------------------------------------------------


def _find(s: str, pattern: str) -> str:
    m = re.search(pattern, s)
    return m.group(0) if m else ""


def _find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(pattern, s)]
    return found if limit < 0 else found[:limit]


# --- URLs ------------------------------------------------------------------------------------------------------------


def _url(s: str) -> dict[str, str]:
    parts = urlsplit(s)
    if not parts.scheme and not s.startswith("/"):
        raise ValueError(f"URL must be an absolute URL or an absolute path: {s}")
    return _typed("URL", s)


def _is_url(s: str) -> bool:
    try:
        _url(s)
        return True
    except ValueError:
        return False


def _url_part(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda u: fn(urlsplit(_value(u, "URL")))


def _host(p: Any) -> str:
    return p.netloc.rsplit("@", 1)[-1]


def _hostname(p: Any) -> str:
    return p.hostname or ""


def _port(p: Any) -> str:
    return str(p.port) if p.port is not None else ""


# --- quantities ------------------------------------------------------------------------------------------------------


def _quantity(s: str) -> dict[str, str]:
    parse_quantity(s)  # raises ValueError for a bad quantity
    return _typed("Quantity", s)


def _is_quantity(s: str) -> bool:
    try:
        parse_quantity(s)
        return True
    except (ValueError, ArithmeticError):
        return False


def _q(x: Any) -> Decimal:
    if isinstance(x, int):
        return Decimal(x)
    return parse_quantity(_value(x, "Quantity"))


def _q_new(d: Decimal) -> dict[str, str]:
    return _typed("Quantity", format(d.normalize(), "f"))


def _as_integer(x: Any) -> int:
    d = _q(x)
    if d != d.to_integral_value() or abs(d) > 2**63 - 1:
        raise ValueError("cannot convert value to integer")
    return int(d)


def _compare(a: Any, b: Any) -> int:
    x, y = _q(a), _q(b)
    return (x > y) - (x < y)


# --- IP / CIDR -------------------------------------------------------------------------------------------------------


def _ip(s: str) -> dict[str, str]:
    addr = ipaddress.ip_address(s)  # rejects zones and bad text
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise ValueError(f"IPv4-mapped IPv6 address {s} is not allowed")
    return _typed("IP", s)


def _is_ip(s: str) -> bool:
    try:
        _ip(s)
        return True
    except ValueError:
        return False


def _addr(x: Any) -> Any:
    return ipaddress.ip_address(_value(x, "IP"))


def _cidr(s: str) -> dict[str, str]:
    ipaddress.ip_network(s, strict=False)
    return _typed("CIDR", s)


def _is_cidr(s: str) -> bool:
    try:
        _cidr(s)
        return True
    except ValueError:
        return False


def _net(x: Any) -> Any:
    return ipaddress.ip_network(_value(x, "CIDR"), strict=False)


def _contains_ip(c: Any, ip: Any) -> bool:
    addr = ipaddress.ip_address(ip) if isinstance(ip, str) else _addr(ip)
    return addr in _net(c)


def _contains_cidr(c: Any, other: Any) -> bool:
    net = ipaddress.ip_network(other, strict=False) if isinstance(other, str) else _net(other)
    mine = _net(c)
    return net.version == mine.version and net.subnet_of(mine)


def declarations() -> list[Any]:
    """The FunctionDecls of every library above."""

    def fn(name: str, *overloads: tuple[str, Any, list[Any], bool, Callable[..., Any]]) -> Any:
        return cel.FunctionDecl(
            name,
            [
                cel.Overload(oid, ret, params, is_member=member, impl=impl)
                for oid, ret, params, member, impl in overloads
            ],
        )

    return [
        fn("isSorted", ("k8s_list_is_sorted", B, [L], True, _is_sorted)),
        fn("sum", ("k8s_list_sum", DYN, [L], True, _sum)),
        fn("min", ("k8s_list_min", DYN, [L], True, _min)),
        fn("max", ("k8s_list_max", DYN, [L], True, _max)),
        fn("find", ("k8s_string_find", S, [S, S], True, _find)),
        fn(
            "findAll",
            ("k8s_string_find_all", cel.Type.List(S), [S, S], True, _find_all),
            ("k8s_string_find_all_n", cel.Type.List(S), [S, S, N], True, _find_all),
        ),
        fn("url", ("k8s_string_to_url", M, [S], False, _url)),
        fn("isURL", ("k8s_is_url", B, [S], False, _is_url)),
        fn("getScheme", ("k8s_url_scheme", S, [M], True, _url_part(lambda p: p.scheme))),
        fn("getHost", ("k8s_url_host", S, [M], True, _url_part(_host))),
        fn("getHostname", ("k8s_url_hostname", S, [M], True, _url_part(_hostname))),
        fn("getPort", ("k8s_url_port", S, [M], True, _url_part(_port))),
        fn("getEscapedPath", ("k8s_url_path", S, [M], True, _url_part(lambda p: p.path))),
        fn("getQuery", ("k8s_url_query", DYN, [M], True, _url_part(lambda p: parse_qs(p.query)))),
        fn("quantity", ("k8s_string_to_quantity", M, [S], False, _quantity)),
        fn("isQuantity", ("k8s_is_quantity", B, [S], False, _is_quantity)),
        fn("sign", ("k8s_quantity_sign", N, [M], True, lambda q: _compare(q, 0))),
        fn("isInteger", ("k8s_quantity_is_integer", B, [M], True, lambda q: _q(q) == _q(q).to_integral_value())),
        fn("asInteger", ("k8s_quantity_as_integer", N, [M], True, _as_integer)),
        fn("asApproximateFloat", ("k8s_quantity_as_float", D, [M], True, lambda q: float(_q(q)))),
        fn(
            "add",
            ("k8s_quantity_add", M, [M, M], True, lambda a, b: _q_new(_q(a) + _q(b))),
            ("k8s_quantity_add_int", M, [M, N], True, lambda a, b: _q_new(_q(a) + _q(b))),
        ),
        fn(
            "sub",
            ("k8s_quantity_sub", M, [M, M], True, lambda a, b: _q_new(_q(a) - _q(b))),
            ("k8s_quantity_sub_int", M, [M, N], True, lambda a, b: _q_new(_q(a) - _q(b))),
        ),
        fn("compareTo", ("k8s_quantity_compare", N, [M, M], True, _compare)),
        fn("isLessThan", ("k8s_quantity_less", B, [M, M], True, lambda a, b: _compare(a, b) < 0)),
        fn("isGreaterThan", ("k8s_quantity_greater", B, [M, M], True, lambda a, b: _compare(a, b) > 0)),
        fn(
            "ip",
            ("k8s_string_to_ip", M, [S], False, _ip),
            ("k8s_cidr_ip", M, [M], True, lambda c: _typed("IP", _value(c, "CIDR").split("/")[0])),
        ),
        fn("isIP", ("k8s_is_ip", B, [S], False, _is_ip)),
        fn("family", ("k8s_ip_family", N, [M], True, lambda x: _addr(x).version)),
        fn("isLoopback", ("k8s_ip_loopback", B, [M], True, lambda x: _addr(x).is_loopback)),
        fn("isUnspecified", ("k8s_ip_unspecified", B, [M], True, lambda x: _addr(x).is_unspecified)),
        fn("isGlobalUnicast", ("k8s_ip_global_unicast", B, [M], True,
                               lambda x: not (_addr(x).is_multicast or _addr(x).is_loopback or _addr(x).is_link_local
                                              or _addr(x).is_unspecified or str(_addr(x)) == "255.255.255.255"))),
        fn("isLinkLocalUnicast", ("k8s_ip_ll_unicast", B, [M], True,
                                  lambda x: _addr(x).is_link_local and not _addr(x).is_multicast)),
        fn("isLinkLocalMulticast", ("k8s_ip_ll_multicast", B, [M], True,
                                    lambda x: _addr(x).is_multicast and (
                                        str(_addr(x)).startswith("224.0.0.") or str(_addr(x)).lower().startswith("ff02:")))),
        fn("cidr", ("k8s_string_to_cidr", M, [S], False, _cidr)),
        fn("isCIDR", ("k8s_is_cidr", B, [S], False, _is_cidr)),
        fn(
            "containsIP",
            ("k8s_cidr_contains_ip_string", B, [M, S], True, _contains_ip),
            ("k8s_cidr_contains_ip", B, [M, M], True, _contains_ip),
        ),
        fn(
            "containsCIDR",
            ("k8s_cidr_contains_cidr_string", B, [M, S], True, _contains_cidr),
            ("k8s_cidr_contains_cidr", B, [M, M], True, _contains_cidr),
        ),
        fn("prefixLength", ("k8s_cidr_prefix_length", N, [M], True, lambda c: _net(c).prefixlen)),
        fn("masked", ("k8s_cidr_masked", M, [M], True, lambda c: _typed("CIDR", str(_net(c))))),
    ]  # fmt: skip
