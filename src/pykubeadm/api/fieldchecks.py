"""String and value checks shared by the config validation (apimachinery's IsDNS1123Subdomain & co., image
references, CIDR lists) and Go-style printing of bad values in field errors."""

from __future__ import annotations

import ipaddress
import re

__all__ = [
    "GoValue",
    "dns1123_subdomain_errors",
    "is_abs",
    "is_ip",
    "parse_cidrs",
    "range_size",
    "valid_image_reference",
    "wildcard_dns1123_subdomain_errors",
]


class GoValue:
    """A non-scalar bad value, printed as Go's `%#v` (e.g. `[]string{"a", "b"}`)."""

    def __init__(self, value: object):
        self.value = value

    def __str__(self) -> str:
        return _go_repr(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GoValue) and other.value == self.value

    def __hash__(self) -> int:
        return hash(repr(self.value))


def _go_repr(v: object) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list | tuple):
        if all(isinstance(x, str) for x in v):
            return "[]string{" + ", ".join(_go_repr(x) for x in v) + "}"
        return "[]interface {}{" + ", ".join(_go_repr(x) for x in v) + "}"
    if isinstance(v, dict):
        items = ", ".join(f"{_go_repr(k)}:{_go_repr(v[k])}" for k in sorted(v))
        return "map[string]bool{" + items + "}"
    return str(v)


# --- apimachinery string checks -------------------------------------------------------------------------------------

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_DNS1123_SUBDOMAIN_RE = re.compile("^" + _DNS1123_SUBDOMAIN_FMT + "$")
_WILDCARD_FMT = r"\*\." + _DNS1123_SUBDOMAIN_FMT
_WILDCARD_RE = re.compile("^" + _WILDCARD_FMT + "$")
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character"
)
_WILDCARD_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of "
    "lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, example: str) -> str:
    return f"{msg} (e.g. '{example}', regex used for validation is '{fmt}')"


def dns1123_subdomain_errors(value: str) -> list[str]:
    """apimachinery IsDNS1123Subdomain."""
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def wildcard_dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _WILDCARD_RE.match(value):
        errs.append(_regex_error(_WILDCARD_MSG, _WILDCARD_FMT, "*.example.com"))
    return errs


def is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def is_abs(path: str) -> bool:
    return path.startswith("/")


# --- image references (distribution/reference) ---------------------------------------------------------------

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_REFERENCE_RE = re.compile(
    rf"^(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*(?::[\w][\w.-]{{0,127}})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$"
)


def parse_cidrs(value: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network] | None:
    out = []
    for part in value.split(","):
        try:
            out.append(ipaddress.ip_network(part.strip(), strict=False))
        except ValueError:
            return None
        if "/" not in part:
            return None
    return out


def range_size(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> int:
    host_bits = net.max_prefixlen - net.prefixlen
    return (1 << 63) - 1 if host_bits >= 63 else 1 << host_bits


def valid_image_reference(ref: str) -> bool:
    """Whether `ref` matches distribution/reference's ReferenceRegexp."""
    return _REFERENCE_RE.match(ref) is not None
