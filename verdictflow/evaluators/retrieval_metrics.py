"""Retrieval metrics of the RQ evaluation spec (001), one function per metric.

Every function takes one query's ranked doc ids (best first) and its judgments
``{doc_id: rel}``, and looks at the top ``k``. A document is relevant when ``rel > 0``.

- ``recall@k`` = |top-k ∩ relevant| / |relevant|, 0 when nothing is relevant.
- ``mrr@k`` = 1 / (1-indexed rank of the first relevant document in the top k), else 0.
- ``ndcg@k`` (graded, exponential gain; ``ndcg_burges`` in ranx):
  DCG = Σ_{i=1..k} (2^rel(d_i) − 1) / log2(i + 1); IDCG = DCG of the ideal ranking of the
  judged documents by decreasing gain, ties by ``lex(id)``; nDCG = DCG / IDCG, 0 when IDCG = 0.
  On binary judgments it equals trec_eval's ``ndcg_cut_k`` (linear gain), checked in tests.

Ranking a scored run is separate (:func:`rank_by_score`): score descending, ties by ``lex(id)``
as the spec says (trec_eval breaks ties by docno *descending*; compare on runs without ties).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

Judgments = Mapping[str, int]
Metric = Callable[[Sequence[str], Judgments, int], float]


def recall_at_k(ranked: Sequence[str], judgments: Judgments, k: int) -> float:
    """Share of the relevant documents found in the top k (binary relevance)."""
    relevant = {d for d, rel in judgments.items() if rel > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at_k(ranked: Sequence[str], judgments: Judgments, k: int) -> float:
    """Reciprocal rank of the first relevant document in the top k, 0 if there is none."""
    for rank, doc in enumerate(ranked[:k], start=1):
        if judgments.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def _gain(rel: int) -> float:
    return float(2**rel - 1) if rel > 0 else 0.0


def _dcg(gains: Iterable[float]) -> float:
    # Summed in rank order with math.fsum: exactly rounded, independent of float accumulation.
    return math.fsum(g / math.log2(i + 1) for i, g in enumerate(gains, start=1))


def ndcg_at_k(ranked: Sequence[str], judgments: Judgments, k: int) -> float:
    """Graded nDCG with gain 2^rel − 1 and discount log2(i + 1)."""
    ideal = sorted(judgments.items(), key=lambda item: (-_gain(item[1]), item[0]))
    idcg = _dcg(_gain(rel) for _, rel in ideal[:k])
    if idcg == 0.0:
        return 0.0
    return _dcg(_gain(judgments.get(doc, 0)) for doc in ranked[:k]) / idcg


METRICS: dict[str, Metric] = {"recall": recall_at_k, "mrr": mrr_at_k, "ndcg": ndcg_at_k}
_METRIC_ID = re.compile(r"^(?P<name>[a-z]+)@(?P<k>[1-9][0-9]*)$")


def parse_metric(metric_id: str) -> tuple[Metric, int]:
    """``"ndcg@10"`` -> (ndcg_at_k, 10); a clear ValueError for anything else."""
    match = _METRIC_ID.match(metric_id)
    if match is None or match["name"] not in METRICS:
        known = ", ".join(f"{n}@K" for n in METRICS)
        raise ValueError(f"unknown metric {metric_id!r}; expected one of {known}")
    return METRICS[match["name"]], int(match["k"])


def rank_by_score(scored: Iterable[tuple[str, float]]) -> list[str]:
    """Doc ids by score descending, ties by ``lex(id)``; a doc listed twice keeps its best."""
    best: dict[str, float] = {}
    for doc, score in scored:
        if doc not in best or score > best[doc]:
            best[doc] = score
    return [doc for doc, _ in sorted(best.items(), key=lambda item: (-item[1], item[0]))]


def macro_average(values: Sequence[float]) -> float:
    """Simple mean over queries (0 for no queries), exactly rounded."""
    return math.fsum(values) / len(values) if values else 0.0
