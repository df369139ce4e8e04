"""Command-line arguments of static Pods and the kubelet: kubeadm's `ArgumentsToCommand` and the Arg list helpers.

Used by the manifest builders (control plane, etcd) and by `phases/kubelet` (kubeadm-flags.env). v1beta4 `extraArgs` is a
list of `{name, value}`, so duplicates are allowed; any object with `name` and `value` attributes (the config API's
`Arg`), a `(name, value)` pair or a `{"name", "value"}` mapping is accepted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Arg", "ArgLike", "arguments_to_command", "as_args", "get_arg_value", "set_arg_value"]


@dataclass(frozen=True)
class Arg:
    """One `--name=value` flag."""

    name: str
    value: str


ArgLike = Arg | tuple[str, str] | Mapping[str, Any] | Any


def _one(a: ArgLike) -> Arg:
    if isinstance(a, Arg):
        return a
    if isinstance(a, tuple):
        return Arg(str(a[0]), str(a[1]))
    if isinstance(a, Mapping):
        return Arg(str(a.get("name", "")), str(a.get("value", "")))
    return Arg(str(a.name), str(a.value))


def as_args(args: Iterable[ArgLike] | None) -> list[Arg]:
    """Normalise a list of config-API args (or pairs, or mappings) to `Arg`s, keeping order and duplicates."""
    return [_one(a) for a in (args or ())]


def get_arg_value(args: Sequence[ArgLike] | None, name: str) -> str | None:
    """The value of the *last* arg called `name` (kubeadm's GetArgValue with startIdx -1), or None."""
    for a in reversed(as_args(args)):
        if a.name == name:
            return a.value
    return None


def set_arg_value(args: list[Arg], name: str, value: str) -> list[Arg]:
    """Set `name` to `value`: replace the first arg of that name (dropping later duplicates) or append it."""
    out: list[Arg] = []
    done = False
    for a in args:
        if a.name == name:
            if not done:
                out.append(Arg(name, value))
                done = True
            continue
        out.append(a)
    if not done:
        out.append(Arg(name, value))
    return out


def arguments_to_command(base: Iterable[ArgLike], overrides: Iterable[ArgLike] | None) -> list[str]:
    """kubeadm 1.31–1.35 `ArgumentsToCommand`: user args replace *every* default of the same name, duplicates among the
    user args are kept, and the whole list is sorted by name, then value, and rendered as `--name=value`."""
    user = as_args(overrides)
    names = {a.name for a in user}
    merged = user + [a for a in as_args(base) if a.name not in names]
    merged.sort(key=lambda a: (a.name, a.value))
    return [f"--{a.name}={a.value}" for a in merged]
