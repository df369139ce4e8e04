"""The kubelet's container restart and image pull back-off (CrashLoopBackOff, ImagePullBackOff): used by the pod
workers of both runtimes.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BackOff"]


@dataclass
class BackOff:
    """Kubelet container restart back-off: 0 s first, then `initial` doubling to `cap`; reset after `reset_after`."""

    initial: float = 10.0
    cap: float = 300.0
    reset_after: float = 600.0
    current: float = 0.0

    def next_delay(self, ran_for: float) -> float:
        if ran_for >= self.reset_after:
            self.current = 0.0
        delay = self.current
        self.current = self.initial if self.current == 0 else min(self.current * 2, self.cap)
        return delay
