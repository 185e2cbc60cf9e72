"""The spec's numeric rules, shared by both judges: rounding, bands, caps, harmonic mean.

- "round halves up": :func:`round_half_up` uses decimal arithmetic (Python's ``round`` rounds
  halves to even, and binary floats misplace halves such as 2.675).
- "lower band if exactly on edge": :func:`band` puts a value that equals a band's lower edge in
  the band below (0.75 covered is *Partial*, not *Fully*; a Jaccard of 0.8 is *Some*).
- Caps are recorded, not just applied: every cap that lowered a score names its rule, the
  limit and the score before it (the verdict's evidence of *why*).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any


def round_half_up(value: float, digits: int = 0) -> float:
    """``value`` rounded to ``digits`` decimals, halves away from zero."""
    quantum = Decimal(1).scaleb(-digits)
    return float(Decimal(repr(value)).quantize(quantum, rounding=ROUND_HALF_UP))


def round_int(value: float) -> int:
    """The spec's ``round(x)``: nearest integer, halves up."""
    return int(round_half_up(value, 0))


def clamp_score(value: float) -> float:
    """A score in [0, 10], rounded half up to 2 decimals."""
    return round_half_up(min(10.0, max(0.0, value)), 2)


def band(value: float, edges: Sequence[tuple[float, str]], below: str) -> str:
    """The label of the highest band whose lower edge ``value`` strictly exceeds.

    ``edges`` are (lower edge, label) from high to low; a value exactly on an edge falls into
    the band below it, as the spec's "lower band if exactly on edge" asks.
    """
    for edge, label in edges:
        if value > edge:
            return label
    return below


def harmonic_mean(a: float, b: float) -> float:
    """2ab / (a + b), and 0 when either is 0 (no credit without both)."""
    if a <= 0.0 or b <= 0.0:
        return 0.0
    return 2.0 * a * b / (a + b)


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


class Caps:
    """Applies caps to one metric's score and remembers which ones bit."""

    def __init__(self) -> None:
        self.applied: list[dict[str, Any]] = []

    def cap(self, score: float, limit: float, rule: str, when: bool) -> float:
        """``min(score, limit)`` when the rule fires; record it when it lowered the score."""
        if not when:
            return score
        if score > limit:
            self.applied.append({"rule": rule, "limit": limit, "before": clamp_score(score)})
            return limit
        return score
