"""Pod Security levels, versions and a namespace's policy from its `pod-security.kubernetes.io/*` labels.

Mirrors k8s.io/pod-security-admission `api/helpers.go`: a bad label value is an error for the namespace write and
evaluates as `restricted` (enforce) or `privileged` (audit, warn: they fail open); `warn` defaults to a stricter
explicitly set `enforce`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

__all__ = [
    "LABEL_PREFIX",
    "LevelVersion",
    "Policy",
    "compare_levels",
    "parse_level",
    "parse_version",
    "policy_to_evaluate",
]

LABEL_PREFIX = "pod-security.kubernetes.io/"
LEVELS = ("privileged", "baseline", "restricted")
_VERSION = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")


@dataclass(frozen=True)
class LevelVersion:
    level: str = "privileged"
    minor: int | None = None  # None = latest

    def __str__(self) -> str:
        return f"{self.level}:{'latest' if self.minor is None else f'v1.{self.minor}'}"


@dataclass(frozen=True)
class Policy:
    enforce: LevelVersion = field(default_factory=LevelVersion)
    audit: LevelVersion = field(default_factory=LevelVersion)
    warn: LevelVersion = field(default_factory=LevelVersion)

    def fully_privileged(self) -> bool:
        return all(lv.level == "privileged" for lv in (self.enforce, self.audit, self.warn))

    def equivalent(self, other: Policy) -> bool:
        def same(a: LevelVersion, b: LevelVersion) -> bool:
            return (a.level == "privileged" and b.level == "privileged") or a == b

        return same(self.enforce, other.enforce) and same(self.audit, other.audit) and same(self.warn, other.warn)


def parse_level(value: str) -> tuple[str, str]:
    """(level, error): an unknown level is `restricted` with kube's error text."""
    if value in LEVELS:
        return value, ""
    return "restricted", "must be one of " + ", ".join(LEVELS)


def parse_version(value: str) -> tuple[int | None, str]:
    """(minor or None for latest, error)."""
    if value == "latest":
        return None, ""
    m = _VERSION.match(value)
    if not m:
        return None, 'must be "latest" or "v1.x"'
    return int(m.group(1)), ""


def compare_levels(a: str, b: str) -> int:
    order = {"privileged": 0, "baseline": 1, "restricted": 2}
    return (order.get(a, 1) > order.get(b, 1)) - (order.get(a, 1) < order.get(b, 1))


def policy_to_evaluate(labels: dict[str, str], defaults: Policy) -> tuple[Policy, list[tuple[str, str, str]]]:
    """The namespace's policy and its label errors as (label, value, message)."""
    errors: list[tuple[str, str, str]] = []
    modes = {"enforce": defaults.enforce, "audit": defaults.audit, "warn": defaults.warn}
    has_enforce_level = has_warn_level = has_warn_version = False
    for mode in ("enforce", "audit", "warn"):
        key = LABEL_PREFIX + mode
        if key in labels:
            level, err = parse_level(labels[key])
            if err:
                errors.append((key, labels[key], err))
                if mode != "enforce":
                    level = "privileged"  # audit and warn fail open
            elif mode == "enforce":
                has_enforce_level = True
            if mode == "warn":
                has_warn_level = True
            modes[mode] = replace(modes[mode], level=level)
        vkey = key + "-version"
        if vkey in labels:
            minor, err = parse_version(labels[vkey])
            if err:
                errors.append((vkey, labels[vkey], err))
            if mode == "warn":
                has_warn_version = True
            modes[mode] = replace(modes[mode], minor=minor)
    enforce, warn = modes["enforce"], modes["warn"]
    if not has_warn_level and has_enforce_level and compare_levels(enforce.level, warn.level) > 0:
        modes["warn"] = LevelVersion(enforce.level, warn.minor if has_warn_version else enforce.minor)
    return Policy(modes["enforce"], modes["audit"], modes["warn"]), errors
