"""Hallucination with contexts indexed without the neural pipeline (``context_index: lexical``)
next to the full parse of every context (``parse``, the former path), in the same run.

On HaluEval QA (first 1,000 rows: 2,000 answers) and QAGS CNN/DM and XSum (474 summaries):
ROC-AUC over scored cases (HaluEval), Pearson of 1 - hallucination with the human score (QAGS,
DEFER as 0, as ``bench/validate_answers.py``), the share of rows whose decision is the same in
both modes, the time each mode took, and the disagreements with the anchors whose support
changed (the why).

    python bench/context_index_agreement.py [--data ../shared/data] [--show 12]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path
from typing import Any

from scipy.stats import pearsonr
from sklearn.metrics import roc_auc_score
from validate_answers import halueval_events, qags_events

from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.kinds import Tier
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Verdict
from verdictflow.scoring_setup import load_scoring

ROOT = Path(__file__).resolve().parent.parent
MODES = ("parse", "lexical")


def hallucination_verdicts(events: list[AnswerEvent], mode: str) -> tuple[list[Verdict], float]:
    policy = Policy.model_validate({"hallucination": {"context_index": mode}})
    scoring = load_scoring(policy, "none")
    start = time.perf_counter()
    verdicts = []
    for i in range(0, len(events), 64):
        for row in score_answers(events[i : i + 64], scoring.ctx, scoring.analyzer, Tier.NLP):
            verdicts.extend(row)
    return verdicts, time.perf_counter() - start


def support_changes(a: Verdict, b: Verdict) -> list[str]:
    """Anchors whose support differs between the two verdicts, as ``text: a -> b``."""
    left = {(x["kind"], x["start"]): x for x in a.evidence.get("anchors", [])}
    right = {(x["kind"], x["start"]): x for x in b.evidence.get("anchors", [])}
    return [
        f"{x['kind']} {x['text']!r}: {x['support']} -> {right[k]['support']}"
        for k, x in left.items()
        if k in right and right[k]["support"] != x["support"]
    ]


def report(name: str, events: list[AnswerEvent], target: list[Any], show: int) -> None:
    runs = {mode: hallucination_verdicts(events, mode) for mode in MODES}
    chars = sum(len(c.text) for e in events for c in e.context_passages)
    print(f"\n{name}: {len(events)} answers, {chars:,} characters of context")
    for mode, (verdicts, seconds) in runs.items():
        pairs = zip(verdicts, target, strict=True)
        scored = [(1 - v.score, y) for v, y in pairs if v.score is not None]
        if name.startswith("halueval"):
            auc = roc_auc_score([y for _, y in scored], [s for s, _ in scored])
            figure = f"ROC-AUC over scored {auc:.4f}"
        else:
            flat = [0.0 if v.score is None else 1 - v.score for v in verdicts]
            figure = f"Pearson of 1 - hallucination {pearsonr(flat, target)[0]:.4f}"
        print(f"  {mode:<8} {figure}, {len(scored)} scored, {seconds:6.1f} s")
    parse, lexical = runs["parse"][0], runs["lexical"][0]
    differ = [(a, b) for a, b in zip(parse, lexical, strict=True) if a.decision != b.decision]
    same_score = sum(a.score == b.score for a, b in zip(parse, lexical, strict=True))
    print(
        f"  decision agreement {1 - len(differ) / len(parse):.2%} ({len(differ)} differ); "
        f"identical score on {same_score} of {len(parse)}"
    )
    for a, b in differ[:show]:
        print(f"    {a.input_id}: {a.decision.value} {a.score} -> {b.decision.value} {b.score}")
        for change in support_changes(a, b)[:4]:
            print(f"      {change}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--show", type=int, default=12, help="disagreements to print per set")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"machine: {platform.node()} | {os.cpu_count()} cores | load {load:.2f}")
    events, labels = halueval_events(args.data)
    report("halueval", events, labels, args.show)
    for split in ("cnndm", "xsum"):
        events, human = qags_events(args.data, split)
        report(f"qags-{split}", events, human, args.show)


if __name__ == "__main__":
    main()
