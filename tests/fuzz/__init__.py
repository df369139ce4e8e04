"""Fuzz tests: hypothesis with a fixed seed and a bounded budget (`fuzz_settings`), so a run is repeatable."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings


def fuzz_settings(max_examples: int) -> settings:
    """Derandomized, no example database, no deadline, explicit and generated examples only, no health checks."""
    return settings(
        derandomize=True,
        database=None,
        deadline=None,
        max_examples=max_examples,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
