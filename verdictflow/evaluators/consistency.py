"""Q2 consistency: mean pairwise Jaccard of the variants' token sets (spec 000).

``J(a, b) = |a ∩ b| / |a ∪ b|`` with ``J(∅, ∅) = 1`` (two empty answers are identical) and
``J(a, ∅) = 0``. The caller refuses to PASS when every variant is empty (fail closed).
The mean is over all unordered pairs i < j, so it is symmetric and independent of order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from math import fsum


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two token sets."""
    union = len(a | b)
    return 1.0 if union == 0 else len(a & b) / union


@dataclass(frozen=True, slots=True)
class ConsistencyResult:
    """Mean pairwise Jaccard (None with fewer than two variants) and each pair's score."""

    score: float | None
    pairs: tuple[tuple[int, int, float], ...]


def mean_pairwise_jaccard(token_sets: Sequence[frozenset[str]]) -> ConsistencyResult:
    """Average Jaccard over all pairs; pairs are (i, j, J) with i < j in input order."""
    pairs = tuple(
        (i, j, jaccard(token_sets[i], token_sets[j]))
        for i, j in combinations(range(len(token_sets)), 2)
    )
    if not pairs:
        return ConsistencyResult(score=None, pairs=())
    # fsum is exactly rounded, so the mean does not depend on summation order.
    return ConsistencyResult(score=fsum(p[2] for p in pairs) / len(pairs), pairs=pairs)
