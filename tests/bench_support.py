"""Small statistics shared by tests that report figures (never as pass/fail)."""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))]
