"""Q1 groundedness: the share of an answer's distinct tokens found in its contexts (spec 000).

``Q1 = |tokens(A) ∩ ∪ tokens(c_i)| / |tokens(A)|``. Undefined (None) for an answer with no
tokens; the policy turns that into DEFER ``empty_answer`` rather than a silent 0 or 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GroundednessResult:
    """Score and the token sets behind it (sorted, for stable evidence)."""

    score: float | None
    answer_tokens: tuple[str, ...]
    covered: tuple[str, ...]
    uncovered: tuple[str, ...]


def groundedness(
    answer_tokens: frozenset[str], context_tokens: Iterable[frozenset[str]]
) -> GroundednessResult:
    """Token coverage of the answer by the union of the contexts' tokens."""
    union: set[str] = set()
    for tokens in context_tokens:
        union |= tokens
    covered = answer_tokens & union
    uncovered = answer_tokens - union
    score = len(covered) / len(answer_tokens) if answer_tokens else None
    return GroundednessResult(
        score=score,
        answer_tokens=tuple(sorted(answer_tokens)),
        covered=tuple(sorted(covered)),
        uncovered=tuple(sorted(uncovered)),
    )
