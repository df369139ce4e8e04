"""Label and field selectors (`?labelSelector=`, `?fieldSelector=`): parsing and matching, used by list and watch.

Label selectors support `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; field selectors `=`, `==`,
`!=`. Parse errors raise `ApiError` 400 with kube-apiserver's wording.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pykubeadm.apiserver.status import bad_request

__all__ = ["FieldSelector", "LabelSelector", "parse_field_selector", "parse_label_selector"]


@dataclass(frozen=True)
class _Req:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op == "=":
            return has and labels[self.key] == self.values[0]
        if self.op == "!=":
            return not has or labels[self.key] != self.values[0]
        if self.op == "in":
            return has and labels[self.key] in self.values
        return not has or labels[self.key] not in self.values  # notin


@dataclass(frozen=True)
class LabelSelector:
    reqs: tuple[_Req, ...] = ()

    def empty(self) -> bool:
        return not self.reqs

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.reqs)


_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\(([^)]*)\)|(==|!=|=)\s*([A-Za-z0-9_.-]*))?\s*$")


def _split_top(text: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


def parse_label_selector(text: str | None) -> LabelSelector:
    if not text or not text.strip():
        return LabelSelector()
    reqs = []
    for part in _split_top(text):
        m = _SET_RE.match(part)
        if not m:
            raise bad_request(f"unable to parse requirement: {part.strip()!r}: invalid label selector")
        neg, key, setop, setvals, eqop, eqval = m.groups()
        if neg and (setop or eqop):
            raise bad_request(f"unable to parse requirement: {part.strip()!r}: invalid label selector")
        if neg:
            reqs.append(_Req(key, "!"))
        elif setop:
            vals = tuple(v.strip() for v in setvals.split(",") if v.strip())
            reqs.append(_Req(key, setop, vals))
        elif eqop:
            reqs.append(_Req(key, "!=" if eqop == "!=" else "=", (eqval,)))
        else:
            reqs.append(_Req(key, "exists"))
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True)
class FieldSelector:
    reqs: tuple[tuple[str, bool, str], ...] = ()  # (field, equal?, value)

    def empty(self) -> bool:
        return not self.reqs

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all((fields.get(f, "") == v) == eq for f, eq, v in self.reqs)

    def single_name(self) -> str | None:
        """The name when the selector is exactly `metadata.name=<n>` (single-object watches)."""
        names = [v for f, eq, v in self.reqs if f == "metadata.name" and eq]
        return names[0] if names else None


def parse_field_selector(text: str | None, supported: Callable[[str], bool]) -> FieldSelector:
    if not text or not text.strip():
        return FieldSelector()
    reqs = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        for op in ("!=", "==", "="):
            if op in part:
                f, _, v = part.partition(op)
                f = f.strip()
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        if not supported(f):
            raise bad_request(f"field label not supported: {f}")
        reqs.append((f, op != "!=", v.strip()))
    return FieldSelector(tuple(reqs))
