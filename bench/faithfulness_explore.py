"""Groundwork for the faithfulness verdict (issue 16): which signals separate a fabricated
detail from a paraphrase on SummEdits, measured leave-one-domain-out.

For each SummEdits domain (news, podcast, samsum, scitldr) a logistic regression is trained on
the three other domains, its threshold chosen on the held-out domain's ``evaluation`` split
(max balanced accuracy) and applied to its ``test`` split, the published protocol. Printed
next to today's hallucination (1 - score) and groundedness under the same protocol, and the
published SummaC-Conv and QAFactEval figures. Signals come from the production parse and
context index (``AnswerAnalyzer``) and the hallucination check; nothing is fitted here that
the verdict would not compute.

    python bench/faithfulness_explore.py [--data ../shared/data] [--signals base|all]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.preprocessing import StandardScaler

from verdictflow.evaluators.answer_analysis import ParsedAnswer
from verdictflow.evaluators.answer_verdicts import score_groundedness
from verdictflow.evaluators.evidence_index import EvidenceIndex
from verdictflow.evaluators.hallucination import HallucinationResult, hallucination
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.scoring_setup import load_scoring

ROOT = Path(__file__).resolve().parent.parent
DOMAINS = ("news", "podcast", "samsum", "scitldr")
PUBLISHED = {  # balanced accuracy, SummEdits README (news / podcast / samsum / scitldr)
    "SummaC-Conv": (61.9, 58.1, 53.1, 59.7),
    "QAFactEval": (74.4, 63.7, 66.2, 67.5),
}
KINDS = ("entity", "number", "date", "time", "claim", "term")
FACT_KINDS = frozenset({"entity", "number", "date", "time"})


def rows(data: Path, domain: str) -> list[dict[str, object]]:
    path = data / "summedits" / f"summedits_{domain}.json"
    return [r for r in json.loads(path.read_text()) if not str(r["id"]).endswith("_og")]


def sentence_of(index: EvidenceIndex, position: int) -> int | None:
    for i, sentence in enumerate(index.sentences):
        if sentence.start <= position < sentence.end:
            return i
    return None


def signals(event: AnswerEvent, parsed: ParsedAnswer, result: HallucinationResult, q1: float,
            extended: bool) -> list[float]:  # fmt: skip
    checks = result.checks
    out: list[float] = []
    for kind in KINDS:
        mine = [c for c in checks if c.anchor.kind == kind]
        unsupported = sum(c.support == "unsupported" for c in mine)
        partial = sum(c.support == "partial" for c in mine)
        out += [unsupported, unsupported / len(mine) if mine else 0.0, partial]
    fabricated = sum(c.support == "unsupported" and c.anchor.kind in FACT_KINDS for c in checks)
    out += [
        float(fabricated > 0),
        result.claim_error if result.claim_error is not None else 0.0,
        result.overlap,
        q1,
        float(len(checks)),
    ]
    if not extended:
        return out
    # Extended: where in the context the support is, against the rest of the claim.
    context = parsed.contexts[0] if parsed.contexts else None
    supported = [c for c in checks if c.support != "unsupported" and c.span is not None]
    sentences = [sentence_of(context, c.span[0]) for c in supported] if context else []
    spread = len(set(sentences)) / len(sentences) if sentences else 0.0
    # Novel content words and bigrams of the answer (what the drift overlap averages).
    words = list(parsed.content_words)
    context_words = frozenset().union(*(c.content_unigrams for c in parsed.contexts))
    novel_words = sum(w not in context_words for w in words) / len(words) if words else 0.0
    context_bigrams = frozenset().union(*(c.content_bigrams for c in parsed.contexts))
    pairs = list(itertools.pairwise(words))
    novel_bigrams = sum(p not in context_bigrams for p in pairs) / len(pairs) if pairs else 0.0
    # Facts supported only away from where the claims are supported ("swaps").
    claim_sentences = {
        sentence_of(context, c.span[0])
        for c in supported
        if context is not None and c.anchor.kind == "claim" and c.span is not None
    }
    swaps = sum(
        1
        for c in supported
        if context is not None
        and c.anchor.kind in FACT_KINDS
        and claim_sentences
        and sentence_of(context, c.span[0]) not in claim_sentences
    )
    out += [spread, novel_words, novel_bigrams, float(swaps), float(len(result.hedged))]
    return out


def featurise(data: Path, extended: bool) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray,
                                                              np.ndarray, np.ndarray]]:  # fmt: skip
    scoring = load_scoring(Policy(), "none")
    ctx, analyzer = scoring.ctx, scoring.analyzer
    out = {}
    for domain in DOMAINS:
        data_rows = rows(data, domain)
        events = [
            AnswerEvent(id=str(r["id"]), answer=str(r["summary"]), contexts=[str(r["doc"])])
            for r in data_rows
        ]
        features, hallu, q1s = [], [], []
        for start in range(0, len(events), 64):
            chunk = events[start : start + 64]
            for event, parsed in zip(chunk, analyzer.analyze(chunk), strict=True):
                q1 = score_groundedness(event, ctx).score or 0.0
                result = hallucination(
                    parsed.anchors, parsed.hedged, parsed.content_words, parsed.contexts
                )
                features.append(signals(event, parsed, result, q1, extended))
                hallu.append(1.0 - result.score if result.score is not None else 0.0)
                q1s.append(q1)
        labels = np.array([int(r["label"]) for r in data_rows])
        test = np.array([r["split"] == "test" for r in data_rows])
        out[domain] = (np.array(features), labels, test, np.array(hallu), np.array(q1s))
        print(f"  {domain}: {len(events)} summaries ({labels.mean():.0%} consistent)")
    return out


def threshold_on(scores: np.ndarray, labels: np.ndarray) -> float:
    best = (-1.0, 0.5)
    for t in np.unique(scores):
        acc = balanced_accuracy_score(labels, scores >= t)
        if acc > best[0]:
            best = (acc, float(t))
    return best[1]


def protocol(scores: np.ndarray, labels: np.ndarray, test: np.ndarray) -> tuple[float, float]:
    """Balanced accuracy on test at the evaluation split's threshold, and test ROC-AUC."""
    t = threshold_on(scores[~test], labels[~test])
    return (
        100 * balanced_accuracy_score(labels[test], scores[test] >= t),
        roc_auc_score(labels[test], scores[test]),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--signals", choices=["base", "all"], default="all")
    args = parser.parse_args()
    print(f"machine: {platform.node()} | {os.cpu_count()} cores | load {os.getloadavg()[0]:.2f}")
    table = featurise(args.data, args.signals == "all")
    names = ("faithfulness (LODO)", "1 - hallucination", "groundedness")
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for held in DOMAINS:
        train = [d for d in DOMAINS if d != held]
        x = np.vstack([table[d][0] for d in train])
        y = np.concatenate([table[d][1] for d in train])
        scaler = StandardScaler().fit(x)
        model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000)
        model.fit(scaler.transform(x), y)
        features, labels, test, hallu, q1 = table[held]
        scores = model.predict_proba(scaler.transform(features))[:, 1]
        results["faithfulness (LODO)"].append(protocol(scores, labels, test))
        results["1 - hallucination"].append(protocol(hallu, labels, test))
        results["groundedness"].append(protocol(q1, labels, test))
    header = "".join(f"{d:>16}" for d in DOMAINS)
    print(f"\nbalanced accuracy % on test (ROC-AUC), signals: {args.signals}")
    print(f"{'score':<22}{header}{'mean':>10}")
    for name, figures in results.items():
        cells = "".join(f"{acc:>9.1f} ({auc:.2f})" for acc, auc in figures)
        print(f"{name:<22}{cells}{np.mean([a for a, _ in figures]):>10.1f}")
    for name, figures_ in PUBLISHED.items():
        cells = "".join(f"{acc:>16.1f}" for acc in figures_)
        print(f"{name + ' (published)':<22}{cells}{np.mean(figures_):>10.1f}")


if __name__ == "__main__":
    main()
