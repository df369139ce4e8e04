"""Go/pflag-compatible click parameter types shared by the kube-controller-manager and kube-scheduler commands.

Durations parse like Go's time.ParseDuration, booleans like strconv.ParseBool and may be bare (`--leader-elect`) or
valued (`--leader-elect=false`); leftover arguments are unknown flags, reported together as a startup error.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from pykubeadm.util.goduration import parse_duration

__all__ = [
    "GoBool",
    "GoDuration",
    "bool_flag",
    "parse_go_bool",
    "path_or_none",
    "reject_unknown_flags",
]


def parse_go_bool(text: str) -> bool:
    """strconv.ParseBool."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


class GoDuration(click.ParamType):
    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> timedelta:
        if isinstance(value, timedelta):
            return value
        try:
            return parse_duration(str(value))
        except ValueError as err:
            self.fail(str(err), param, ctx)


class GoBool(click.ParamType):
    name = "bool"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> bool:
        if isinstance(value, bool):
            return value
        try:
            return parse_go_bool(str(value))
        except ValueError as err:
            self.fail(str(err), param, ctx)


def bool_flag(name: str, default: bool, help_text: str) -> Any:
    """A Go-style boolean: `--x`, `--x=true`, `--x=false`."""
    return click.option(
        name, type=GoBool(), is_flag=False, flag_value="true", default=default, show_default=True, help=help_text
    )


def path_or_none(value: str | None) -> Path | None:
    return Path(value) if value else None


def reject_unknown_flags(args: list[str]) -> None:
    """Every leftover argument is an unknown flag (or a stray positional): a startup error naming all of them."""
    if args:
        names = [a.split("=", 1)[0] for a in args]
        raise click.UsageError(
            f"unknown flag: {' '.join(names)}" if len(names) == 1 else f"unknown flags: {' '.join(names)}"
        )
