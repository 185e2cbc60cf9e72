"""Validate the faithfulness verdict on human labels no one here wrote (``../shared/data``).

Every figure is out of sample: the model scoring a set was fitted without it.

- **SummEdits, leave one domain out**: for each domain (news, podcast, samsum, scitldr) a model
  is fitted on the three other domains and every non-SummEdits set; its threshold is the one
  maximising balanced accuracy on the held-out domain's ``evaluation`` split, applied to its
  ``test`` split (the data set's protocol). Balanced accuracy % and test ROC-AUC.
- **HaluEval QA, QAGS CNN/DM, QAGS XSum, SummEval, leave one set out**: fitted on every other
  set. HaluEval: ROC-AUC (DEFER = worst, and scored rows only); QAGS: Pearson and Kendall
  against the share of supported sentences; SummEval: summary-level Kendall tau against expert
  consistency (per article over its 16 summaries, averaged).

Each next to the previous version (the same fit on the signals as the previous version computed
them: see ``previous_signals``), today's 1 - hallucination and groundedness (Q1) on the same
rows in the same run, and the published figures. Also printed: the cost of the signals per
answer (after the parse, which the NLP tier pays already) and the shipped model's file size.

    python bench/validate_faithfulness.py [--data ../shared/data] [--json out.json]

Deterministic: same data, same spaCy model, same figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.stats import kendalltau, pearsonr
from sklearn.metrics import roc_auc_score

from verdictflow.evaluators.faithfulness import faithfulness_signals
from verdictflow.evaluators.faithfulness_signals import SIGNAL_NAMES
from verdictflow.evaluators.policy import Policy
from verdictflow.scoring_jobs.training.faithfulness_data import (
    LOADERS,
    SUMMEDITS_DOMAINS,
    load_sets,
)
from verdictflow.scoring_jobs.training.faithfulness_training import (
    Featurised,
    balanced_accuracy,
    featurise,
    fit,
    predict,
)
from verdictflow.scoring_setup import Scoring, load_scoring

ROOT = Path(__file__).resolve().parent.parent
MODEL_FILE = ROOT / "verdictflow" / "data" / "faithfulness_model.json"
PUBLISHED_SUMMEDITS = {  # balanced accuracy, SummEdits README (news / podcast / samsum / scitldr)
    "SummaC-Conv": (61.9, 58.1, 53.1, 59.7),
    "QAFactEval": (74.4, 63.7, 66.2, 67.5),
}
PUBLISHED_OTHER = {
    "halueval-qa": "ChatGPT given the knowledge: 76.83 % accuracy",
    "qags-cnndm": "QAGS 0.545, ROUGE-2 0.459, BERTScore 0.576, UniEval 0.682 (Pearson)",
    "qags-xsum": "QAGS 0.175, ROUGE-2 0.097, BERTScore 0.024, UniEval 0.461 (Pearson)",
    "summeval": "ROUGE-1 0.130, BERTScore 0.090, UniEval 0.371, G-Eval-4 0.425 (Kendall)",
}
Vector = NDArray[np.float64]
#: The signals this version adds (issue 31): the previous version (the fourth round) did not
#: parse the supporting sentences, so these were absent and ``negation_flipped`` counted only
#: negated answer sentences.
RELATION_SIGNALS = ("role_swaps", "misbound_facts", "order_conflicts")
PREVIOUS = "faithfulness, previous"


def previous_signals(sets: Sequence[Featurised], scoring: Scoring) -> list[Featurised]:
    """The same rows' signals as the previous version computed them: the answers analysed
    again by the same pipeline, their relations dropped (the relation signals are then 0 on
    every row, and the fit gives them no weight)."""
    out = []
    for item in sets:
        rows = item.signals.copy()
        events = item.labelled.events
        for start in range(0, len(events), 64):
            chunk = events[start : start + 64]
            analysed = scoring.analyzer.analyze(chunk)
            for row, (event, parsed) in enumerate(zip(chunk, analysed, strict=True), start):
                without = dataclasses.replace(parsed, relations=())
                values = faithfulness_signals(event, without, scoring.ctx).values
                rows[row] = [values[name] for name in SIGNAL_NAMES]
        out.append(dataclasses.replace(item, signals=rows))
    return out


def worst_if_none(values: Sequence[float | None]) -> Vector:
    return np.asarray([0.0 if v is None else v for v in values])


def scores_and_defers(values: Sequence[float | None]) -> tuple[Vector, NDArray[np.bool_]]:
    """A baseline's scores (a DEFER as the worst, 0) and which rows it deferred."""
    return worst_if_none(values), np.asarray([v is None for v in values])


def threshold_on(scores: Vector, positive: NDArray[np.bool_]) -> float:
    """The threshold maximising balanced accuracy (lowest on ties)."""
    best = (-1.0, 0.0)
    for t in np.unique(scores):
        value = balanced_accuracy(scores, positive, float(t))
        if value > best[0]:
            best = (value, float(t))
    return best[1]


def summedits_protocol(scores: Vector, item: Featurised) -> tuple[float, float]:
    positive = item.targets >= 0.5
    split = np.asarray(item.labelled.splits)
    evaluation, test = split == "evaluation", split == "test"
    t = threshold_on(scores[evaluation], positive[evaluation])
    return (
        100 * balanced_accuracy(scores[test], positive[test], t),
        float(roc_auc_score(positive[test], scores[test])),
    )


def summary_level_tau(scores: Vector, item: Featurised) -> float:
    return float(np.mean(article_taus(scores, item)))


def article_taus(scores: Vector, item: Featurised) -> list[float]:
    """Kendall tau per article (over its summaries), where both sides vary."""
    by_doc: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for group, s, t in zip(item.labelled.groups, scores, item.targets, strict=True):
        by_doc[group].append((float(s), float(t)))
    taus = [
        kendalltau([p[0] for p in pairs], [p[1] for p in pairs]).statistic
        for pairs in by_doc.values()
        if len({p[0] for p in pairs}) > 1 and len({p[1] for p in pairs}) > 1
    ]
    return [float(t) for t in taus]


def other_figures(scores: Vector, item: Featurised, deferred: NDArray[np.bool_]) -> str:
    name, t = item.labelled.name, item.targets
    if name == "halueval-qa":
        scored = ~deferred
        return (
            f"ROC-AUC {roc_auc_score(t, scores):.4f} (scored only "
            f"{roc_auc_score(t[scored], scores[scored]):.4f}, {int(deferred.sum())} DEFER)"
        )
    if name == "summeval":
        taus = article_taus(scores, item)
        # The figure's sampling noise: the standard error of the mean over articles (the
        # bench itself is deterministic: a rerun gives the same digits).
        se = float(np.std(taus, ddof=1)) / math.sqrt(len(taus))
        return f"Kendall {float(np.mean(taus)):.4f} (standard error {se:.3f})"
    return f"Pearson {pearsonr(scores, t)[0]:.4f}, Kendall {kendalltau(scores, t).statistic:.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    print(
        f"machine: {platform.node()} | {os.cpu_count()} cores | {platform.processor() or '?'} | "
        f"load {os.getloadavg()[0]:.2f}"
    )
    scoring = load_scoring(Policy(), None)
    sets = featurise(load_sets(args.data, tuple(LOADERS)), scoring, baselines=True)
    before = previous_signals(sets, scoring)
    results: dict[str, dict[str, object]] = {}

    def held_out_scores(name: str, previous: bool = False) -> Vector:
        rows = before if previous else sets
        # The previous version was fitted on the human-labelled sets only.
        model = fit([s for s in rows if s.labelled.name != name
                     and not (previous and s.labelled.source == "perturbations")])  # fmt: skip
        return predict(model, next(s for s in rows if s.labelled.name == name).signals)

    by_name = {s.labelled.name: s for s in sets}

    print("\nSummEdits, leave one domain out: balanced accuracy % on test (test ROC-AUC)")
    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for domain in SUMMEDITS_DOMAINS:
        item = by_name[f"summedits-{domain}"]
        deferred = np.asarray(item.deferred)
        faith = held_out_scores(item.labelled.name)
        faith[deferred] = 0.0
        rows["faithfulness"].append(summedits_protocol(faith, item))
        previous = held_out_scores(item.labelled.name, previous=True)
        previous[deferred] = 0.0
        rows[PREVIOUS].append(summedits_protocol(previous, item))
        rows["1 - hallucination"].append(
            summedits_protocol(worst_if_none(item.hallucination), item)
        )
        rows["groundedness"].append(summedits_protocol(worst_if_none(item.groundedness), item))
    print(f"{'score':<24}" + "".join(f"{d:>16}" for d in SUMMEDITS_DOMAINS) + f"{'mean':>8}")
    for name, figures in rows.items():
        cells = "".join(f"{acc:>9.1f} ({auc:.2f})" for acc, auc in figures)
        mean = float(np.mean([a for a, _ in figures]))
        print(f"{name:<24}{cells}{mean:>8.1f}")
        results[f"summedits/{name}"] = {"per_domain": figures, "mean": mean}
    for name, published in PUBLISHED_SUMMEDITS.items():
        cells = "".join(f"{acc:>16.1f}" for acc in published)
        print(f"{name + ' (published)':<24}{cells}{np.mean(published):>8.1f}")

    print("\nOther sets, leave one set out")
    for name in ("halueval-qa", "qags-cnndm", "qags-xsum", "summeval"):
        item = by_name[name]
        deferred = np.asarray(item.deferred)
        faith = held_out_scores(name)
        faith[deferred] = 0.0
        previous = held_out_scores(name, previous=True)
        previous[deferred] = 0.0
        for label, scores, defer_mask in (
            ("faithfulness", faith, deferred),
            (PREVIOUS, previous, deferred),
            ("1 - hallucination", *scores_and_defers(item.hallucination)),
            ("groundedness", *scores_and_defers(item.groundedness)),
        ):
            text = other_figures(scores, item, defer_mask)
            print(f"  {name:<12} {label:<24} {text}")
            results[f"{name}/{label}"] = {"figures": text}
        print(f"  {name:<12} {'published':<24} {PUBLISHED_OTHER[name]}")

    rows_total = sum(len(s.labelled.events) for s in sets)
    seconds = sum(s.signal_seconds for s in sets)
    chars = sum(len(e.answer) for s in sets for e in s.labelled.events)
    print(
        f"\nsignals after the parse: {1e6 * seconds / rows_total:.0f} us per answer "
        f"({rows_total} answers, mean {chars / rows_total:.0f} chars; contexts cached)"
    )
    print(f"shipped model file: {MODEL_FILE.stat().st_size} bytes")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True, default=str) + "\n")


if __name__ == "__main__":
    main()
