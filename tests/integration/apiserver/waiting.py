"""Waiting on a condition with a deadline (never sleep-then-assert), for the admission tests whose configurations
apply as their watch events arrive."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["eventually"]


def eventually(check: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
