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
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau, pearsonr, spearmanr
from sklearn.metrics import roc_auc_score

from verdictflow.evaluators.answer_verdicts import ScoringContext, score_groundedness
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent

ROOT = Path(__file__).resolve().parent.parent
#: name -> (scorer returning a score in [0, 1] or None for DEFER, threshold used by the policy)
Scorer = Callable[[AnswerEvent], float | None]


def scorers(ctx: ScoringContext) -> dict[str, tuple[Scorer, float]]:
    return {
        "groundedness": (
            lambda e: score_groundedness(e, ctx).score,
            ctx.policy.groundedness.threshold,
        ),
    }


def halueval_events(path: Path) -> tuple[list[AnswerEvent], list[int]]:
    events, labels = [], []
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            row = json.loads(line)
            for kind, label in (("right_answer", 1), ("hallucinated_answer", 0)):
                events.append(
                    AnswerEvent(
                        id=f"h{i}-{label}",
                        query=row["question"],
                        answer=row[kind],
                        contexts=[row["knowledge"]],
                    )
                )
                labels.append(label)
    return events, labels


def qags_events(path: Path) -> tuple[list[AnswerEvent], list[float]]:
    events, human = [], []
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            row = json.loads(line)
            sentences = row["summary_sentences"]
            supported = sum(
                sum(r["response"] == "yes" for r in s["responses"]) >= 2 for s in sentences
            )
            events.append(
                AnswerEvent(
                    id=f"q{i}",
                    answer=" ".join(s["sentence"] for s in sentences),
                    contexts=[row["article"]],
                )
            )
            human.append(supported / len(sentences))
    return events, human


def best_threshold_accuracy(scores: Sequence[float], labels: Sequence[int]) -> tuple[float, float]:
    """Max accuracy of ``score >= t`` over every distinct t, and that t (ties: lowest t)."""
    s, y = np.asarray(scores), np.asarray(labels)
    best = (-1.0, 0.0)
    for t in np.unique(s):
        acc = float(np.mean((s >= t) == (y == 1)))
        if acc > best[0]:
            best = (acc, float(t))
    return best


def evaluate(data: Path) -> dict[str, dict[str, float]]:
    ctx = ScoringContext(Policy())
    results: dict[str, dict[str, float]] = {}
    events, labels = halueval_events(data / "halueval" / "qa_data_first1000.json")
    for name, (scorer, threshold) in scorers(ctx).items():
        raw = [scorer(e) for e in events]
        scores = [0.0 if s is None else s for s in raw]  # DEFER never passes: scored as 0
        acc, t = best_threshold_accuracy(scores, labels)
        at_policy = float(
            np.mean([(s >= threshold) == (y == 1) for s, y in zip(scores, labels, strict=True)])
        )
        results[f"halueval/{name}"] = {
            "n": len(scores),
            "defer": sum(s is None for s in raw),
            "roc_auc": float(roc_auc_score(labels, scores)),
            "best_accuracy": acc,
            "best_threshold": t,
            "policy_threshold": threshold,
            "accuracy_at_policy_threshold": at_policy,
        }
    for split in ("cnndm", "xsum"):
        events, human = qags_events(data / "qags" / f"mturk_{split}.jsonl")
        for name, (scorer, _) in scorers(ctx).items():
            raw = [scorer(e) for e in events]
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
    args = parser.parse_args()
    results = evaluate(args.data)
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
