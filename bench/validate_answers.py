"""Validate answer scores against human-labelled data no one here wrote (``../shared/data``).

Scores come from the production evaluators (the same code the agents run), on:
- HaluEval QA (first 1,000 rows): knowledge + question + right answer = grounded (label 1),
  + hallucinated answer = not grounded (label 0). ROC-AUC, best-threshold accuracy (an upper
  bound: the threshold is chosen on the same data) and accuracy at the policy's threshold.
- QAGS CNN/DM (235) and XSum (239): the article is the context, the summary the answer; the
  human score is the share of summary sentences a majority of 3 workers marked supported.
  Pearson, Spearman and Kendall tau between each score and the human score.

    python bench/validate_answers.py [--data ../shared/data] [--json results.json]

Deterministic: no sampling, no randomness; same data and policy, same figures.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rich.progress import Progress
from scipy.stats import kendalltau, pearsonr, spearmanr
from sklearn.metrics import roc_auc_score

from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.answer_verdicts import ScoringContext, score_groundedness
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.scoring_jobs.training.faithfulness_data import halueval, qags
from verdictflow.scoring_setup import Scoring, load_scoring

ROOT = Path(__file__).resolve().parent.parent
#: Kinds validated, in output order. Hallucination is turned into 1 - score, so that for every
#: kind higher means "better grounded" and DEFER (None) scores 0, i.e. never passes.
KINDS = ("groundedness", "hallucination", "relevance", "completeness", "faithfulness")


def groundedness_figures(data: Path) -> dict[str, float]:
    """Q1 alone on every data set, without spaCy (fast enough for the test suite)."""
    ctx = ScoringContext(Policy())
    events, labels = halueval_events(data)
    scores = [score_groundedness(e, ctx).score or 0.0 for e in events]
    acc, _ = best_threshold_accuracy(scores, labels)
    figures = {"halueval_roc_auc": float(roc_auc_score(labels, scores)), "halueval_best_acc": acc}
    for split in ("cnndm", "xsum"):
        events, human = qags_events(data, split)
        scores = [score_groundedness(e, ctx).score or 0.0 for e in events]
        figures[f"qags_{split}_pearson"] = float(pearsonr(scores, human)[0])
    return figures


def policy_threshold(policy: Policy, kind: str) -> float:
    threshold = float(getattr(policy, kind).threshold)
    return 1.0 - threshold if kind == "hallucination" else threshold


def score_all(events: Sequence[AnswerEvent], scoring: Scoring) -> dict[str, list[float | None]]:
    """Scores per kind for ``events`` (higher = better), None where the verdict deferred."""
    scores: dict[str, list[float | None]] = {k: [] for k in KINDS}
    with Progress(transient=True) as bar:
        task = bar.add_task("scoring", total=len(events))
        for start in range(0, len(events), 64):
            chunk = events[start : start + 64]
            for verdicts in score_answers(chunk, scoring.ctx, scoring.analyzer):
                for v in verdicts:
                    value = v.score
                    if value is not None and v.kind.value == "hallucination":
                        value = 1.0 - value
                    scores[v.kind.value].append(value)
            bar.advance(task, len(chunk))
    return scores


def halueval_events(data: Path) -> tuple[list[AnswerEvent], list[int]]:
    """HaluEval QA as the faithfulness training reads it: right answer 1, hallucinated 0."""
    labelled = halueval(data)
    return list(labelled.events), [int(t) for t in labelled.targets]


def qags_events(data: Path, split: str) -> tuple[list[AnswerEvent], list[float]]:
    """QAGS ``split``: the share of summary sentences a majority of workers marked supported."""
    labelled = qags(data, split)
    return list(labelled.events), list(labelled.targets)


def best_threshold_accuracy(scores: Sequence[float], labels: Sequence[int]) -> tuple[float, float]:
    """Max accuracy of ``score >= t`` over every distinct t, and that t (ties: lowest t)."""
    s, y = np.asarray(scores), np.asarray(labels)
    best = (-1.0, 0.0)
    for t in np.unique(s):
        acc = float(np.mean((s >= t) == (y == 1)))
        if acc > best[0]:
            best = (acc, float(t))
    return best


def evaluate(
    data: Path, idf_stats: str = "default", limit: int | None = None
) -> dict[str, dict[str, float]]:
    """Figures for every kind; ``limit`` keeps the first rows of each data set (for tests)."""
    scoring = load_scoring(Policy(), idf_stats)
    policy = scoring.ctx.policy
    results: dict[str, dict[str, float]] = {}
    events, labels = halueval_events(data)
    if limit is not None:
        events, labels = events[: 2 * limit], labels[: 2 * limit]
    for name, raw in score_all(events, scoring).items():
        scores = [0.0 if s is None else s for s in raw]  # DEFER never passes: scored as 0
        acc, t = best_threshold_accuracy(scores, labels)
        threshold = policy_threshold(policy, name)
        at_policy = float(
            np.mean([(s >= threshold) == (y == 1) for s, y in zip(scores, labels, strict=True)])
        )
        kept = [(s, y) for s, y in zip(raw, labels, strict=True) if s is not None]
        scored_auc = (
            float(roc_auc_score([y for _, y in kept], [s for s, _ in kept]))
            if len({y for _, y in kept}) == 2
            else float("nan")
        )
        results[f"halueval/{name}"] = {
            "n": len(scores),
            "defer": sum(s is None for s in raw),
            "roc_auc": float(roc_auc_score(labels, scores)),
            "roc_auc_scored_only": scored_auc,
            "best_accuracy": acc,
            "best_threshold": t,
            "policy_threshold": threshold,
            "accuracy_at_policy_threshold": at_policy,
        }
    for split in ("cnndm", "xsum"):
        events, human = qags_events(data, split)
        if limit is not None:
            events, human = events[:limit], human[:limit]
        for name, raw in score_all(events, scoring).items():
            scores = [0.0 if s is None else s for s in raw]
            results[f"qags-{split}/{name}"] = {
                "n": len(scores),
                "defer": sum(s is None for s in raw),
                "pearson": float(pearsonr(scores, human)[0]),
                "spearman": float(spearmanr(scores, human)[0]),
                "kendall": float(kendalltau(scores, human)[0]),
            }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--idf-stats", default="default", help="build-idf file, default or none")
    parser.add_argument("--limit", type=int, help="only the first N rows of each data set")
    args = parser.parse_args()
    results = evaluate(args.data, args.idf_stats, args.limit)
    for key, figures in results.items():
        shown = ", ".join(
            f"{k} {v:.4f}" if isinstance(v, float) and not math.isnan(v) else f"{k} {v}"
            for k, v in figures.items()
        )
        print(f"{key:<28} {shown}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
