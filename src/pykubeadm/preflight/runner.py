"""Run preflight checks like kubeadm's RunChecks: warnings (and ignored errors) are printed as `\t[WARNING Name]: msg`,
remaining errors become one PreflightError (exit code 2) listing `\t[ERROR Name]: msg` lines.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pykubeadm.errors import PreflightError, ValidationError
from pykubeadm.preflight.checks import Checker

__all__ = ["ignore_set", "run_checks", "state_writer"]

Writer = Callable[[str], None]


def _stderr(line: str) -> None:
    sys.stderr.write(line)
    sys.stderr.flush()


def state_writer(state: Mapping[str, Any]) -> Writer:
    """Where a workflow's preflight warnings go: stderr, as kubeadm prints them, unless the run data's
    `state["preflight_writer"]` holds another writer (tests put a list's append there)."""
    w = state.get("preflight_writer")
    return w if callable(w) else _stderr


def ignore_set(*sources: Iterable[str]) -> frozenset[str]:
    """Merge --ignore-preflight-errors values and nodeRegistration.ignorePreflightErrors (lower-cased).

    `all` may not be combined with other names."""
    names = {s.strip().lower() for src in sources for item in src for s in item.split(",") if s.strip()}
    if "all" in names and len(names) > 1:
        raise ValidationError(
            ["ignorePreflightErrors: Invalid value: \"all\": don't specify individual checks if 'all' is used"]
        )
    return frozenset(names)


def run_checks(checks: Iterable[Checker], ignore: Iterable[str] = (), write: Writer = _stderr) -> list[str]:
    """Run every check in order; print warnings; raise PreflightError if an error is not ignored.

    Returns the warning lines printed (for tests and callers that log them)."""
    ignored = {i.lower() for i in ignore}
    printed: list[str] = []
    error_lines: list[str] = []
    for check in checks:
        name = check.name()
        warnings, errors = check.check()
        for w in warnings:
            line = f"\t[WARNING {name}]: {w}\n"
            write(line)
            printed.append(line)
        for e in errors:
            if "all" in ignored or name.lower() in ignored:
                line = f"\t[WARNING {name}]: {e}\n"
                write(line)
                printed.append(line)
            else:
                error_lines.append(f"\t[ERROR {name}]: {e}\n")
    if error_lines:
        raise PreflightError(
            "[preflight] Some fatal errors occurred:\n"
            + "".join(error_lines)
            + "[preflight] If you know what you are doing, you can make a check non-fatal with "
            "`--ignore-preflight-errors=...`"
        )
    return printed
