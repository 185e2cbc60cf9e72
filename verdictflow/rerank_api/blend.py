"""Pure ranking arithmetic of the retriever: quality blending and rank fusion. No I/O, no state.

The spec's blend is ``final_score = W_cos * score + W_quality * quality``, re-ranked by
``final_score`` descending; ties go to the smaller ``doc_id`` so that a ranking never depends on
the index's internal order or on dict iteration. A document without a quality row gets
:data:`DEFAULT_QUALITY` (0.5, the spec's "missing quality file" default), i.e. neither lifted nor
sunk relative to an average document.

``score`` is the retrieval mode's relevance: the cosine in dense mode, BM25 divided by the
query's best BM25 score in lexical mode (so the top document scores 1), and in hybrid mode
the fusion of both lists: normalised reciprocal-rank fusion (``rrf``, the default) or the mean
of the max-normalised scores (``combsum``). All are at most 1, so one pair of weights means the
same thing in every mode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

DEFAULT_QUALITY = 0.5
#: The usual RRF constant (Cormack, Clarke and Buettcher 2009); it damps the head of each list.
RRF_K = 60


@dataclass(frozen=True, slots=True)
class Weights:
    """Blend weights; each in [0, 1] (validated at the edges: settings and request bodies)."""

    w_cos: float = 0.85
    w_quality: float = 0.15


@dataclass(frozen=True, slots=True)
class Blended:
    """One ranked result: the mode's relevance, the quality used, and their blend."""

    doc_id: str
    score: float
    quality: float
    final_score: float


def blend(
    candidates: Sequence[tuple[str, float]],
    quality: Mapping[str, float],
    weights: Weights,
    top_k: int,
    default_quality: float = DEFAULT_QUALITY,
) -> list[Blended]:
    """Blend each candidate's score with its quality; best ``top_k`` by final score, ties by id.

    A doc_id listed twice keeps its best score (defensive: fused lists never repeat one).
    """
    best: dict[str, float] = {}
    for doc_id, score in candidates:
        if doc_id not in best or score > best[doc_id]:
            best[doc_id] = score
    rows = []
    for doc_id, score in best.items():
        q = quality.get(doc_id, default_quality)
        rows.append(Blended(doc_id, score, q, weights.w_cos * score + weights.w_quality * q))
    rows.sort(key=lambda r: (-r.final_score, r.doc_id))
    return rows[:top_k]


def normalise_by_max(scored: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """Divide positive scores by the largest one (the top document gets 1.0); drop scores <= 0.

    Used for BM25, whose raw scale depends on the query's length and term rarity.
    """
    positive = [(d, s) for d, s in scored if s > 0]
    if not positive:
        return []
    top = max(s for _, s in positive)
    return [(d, s / top) for d, s in positive]


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], k: int = RRF_K
) -> list[tuple[str, float]]:
    """RRF: ``sum_lists 1 / (k + rank)``, divided by its maximum ``len(rankings) / (k + 1)``.

    The division puts a document ranked first by every list at 1.0, so fused scores live on the
    same [0, 1] scale as cosines and the blend weights keep their meaning. Output is sorted by
    fused score descending, ties by doc_id.
    """
    if not rankings:
        return []
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (k + rank)
    ceiling = len(rankings) / (k + 1)
    return sorted(((d, s / ceiling) for d, s in fused.items()), key=lambda ds: (-ds[1], ds[0]))


Fusion = Literal["rrf", "combsum"]
FUSIONS: tuple[Fusion, ...] = ("rrf", "combsum")


def combsum_fusion(scored: Sequence[Sequence[tuple[str, float]]]) -> list[tuple[str, float]]:
    """CombSUM (Fox and Shaw 1994) of max-normalised scores, averaged over the lists.

    Each list's scores are divided by its best (:func:`normalise_by_max`: the top document of
    each list gets 1.0); a document absent from a list gets that list's lowest normalised score
    (it ranked below everything the list returned), and the fused score is the mean over the
    lists, so it lies in [0, 1] like a cosine. Equal weights: nothing is fitted to a data set.
    Sorted by fused score descending, ties by doc_id.
    """
    normalised = [dict(normalise_by_max(ranking)) for ranking in scored]
    normalised = [n for n in normalised if n]
    if not normalised:
        return []
    floors = [min(n.values()) for n in normalised]
    ids = sorted({d for n in normalised for d in n})
    fused = [
        (
            d,
            sum(n.get(d, floor) for n, floor in zip(normalised, floors, strict=True))
            / len(normalised),
        )
        for d in ids
    ]
    return sorted(fused, key=lambda ds: (-ds[1], ds[0]))


def fuse(fusion: Fusion, scored: Sequence[Sequence[tuple[str, float]]]) -> list[tuple[str, float]]:
    """Fuse ranked ``(doc_id, score)`` lists (each best first) by the named method."""
    if fusion == "rrf":
        return reciprocal_rank_fusion([[d for d, _ in ranking] for ranking in scored])
    if fusion == "combsum":
        return combsum_fusion(scored)
    raise ValueError(f"unknown fusion {fusion!r} (one of {', '.join(FUSIONS)})")


def candidate_count(top_k: int, overfetch: int, minimum: int, maximum: int) -> int:
    """How many candidates to fetch before blending, so quality can lift a document into top k.

    A document outside the fetched candidates can never be returned, however good its quality,
    so the retriever fetches ``max(top_k * overfetch, minimum)`` (capped at ``maximum``).
    """
    return max(top_k, min(max(top_k * overfetch, minimum), maximum))
