"""The relation-swap probe (issue 31): hand-written faithful answers and the same words with a
relation swapped, scored by every answer verdict that has a score.

``tests/data/relation_swaps.jsonl`` holds 34 pairs written before any tuning, kept out of
``../shared/data``: who acquired, beat, taught, hired or paid whom (active, passive, converse
verbs), which of two quantities is larger (comparatives, a superlative), which event came first,
which number, date or place belongs to which entity, negation, and causal direction. Each pair
shares one context; the swapped answer uses the faithful answer's words.

Figures per kind: pairwise accuracy (the faithful answer scored above its swap; ties count
half), swapped answers that FAIL, faithful answers that PASS. The issue's targets for
faithfulness: pairwise >= 0.80, at least half of the swaps FAIL, >= 28 of 32 faithful PASS.

    python bench/relation_probe.py [--json]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.scoring_setup import load_scoring

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests/data/relation_swaps.jsonl"
#: The second probe, written before the relation signals and never used to tune them.
HELD_OUT = PROBE.with_name("relation_swaps_heldout.jsonl")
#: Kinds whose score is higher for a better answer (hallucination is flipped).
KINDS = ("faithfulness", "groundedness", "hallucination", "relevance", "completeness")


def load_pairs(path: Path = PROBE) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def probe(pairs: list[dict[str, str]]) -> dict[str, Any]:
    """Scores and decisions of both answers of every pair, and the figures per kind."""
    scoring = load_scoring(Policy(), "default")
    events = []
    for n, pair in enumerate(pairs):
        for side in ("faithful", "swapped"):
            events.append(AnswerEvent(id=f"p{n:02d}-{side}", query=pair["query"],
                                      answer=pair[side], contexts=[pair["context"]]))  # fmt: skip
    verdicts = {event.id: {v.kind.value: v for v in vs}
                for event, vs in zip(events, score_answers(events, scoring.ctx, scoring.analyzer),
                                     strict=True)}  # fmt: skip
    figures: dict[str, dict[str, float]] = {}
    rows = []
    for kind in KINDS:
        wins, fails, passes, scored = 0.0, 0, 0, 0
        for n, pair in enumerate(pairs):
            good = verdicts[f"p{n:02d}-faithful"][kind]
            bad = verdicts[f"p{n:02d}-swapped"][kind]
            if good.score is None or bad.score is None:
                continue
            scored += 1
            sign = -1.0 if kind == "hallucination" else 1.0
            g, b = sign * good.score, sign * bad.score
            wins += 1.0 if g > b else 0.5 if g == b else 0.0
            fails += bad.decision.value == "FAIL"
            passes += good.decision.value == "PASS"
            if kind == "faithfulness":
                rows.append((pair["category"], good.score, bad.score, bad.decision.value))
        figures[kind] = {"pairs": scored, "pairwise": wins / scored if scored else 0.0,
                         "swapped_fail": fails, "faithful_pass": passes}  # fmt: skip
    by_category: dict[str, list[float]] = defaultdict(list)
    for category, good_score, bad_score, _ in rows:
        by_category[category.split("_")[0]].append(
            1.0 if good_score > bad_score else 0.5 if good_score == bad_score else 0.0
        )
    return {"figures": figures, "rows": rows,
            "categories": {c: sum(v) / len(v) for c, v in sorted(by_category.items())}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--probe",
        type=Path,
        default=PROBE,
        help=f"pairs file (the held-out probe: {HELD_OUT.relative_to(ROOT)})",
    )
    args = parser.parse_args()
    pairs = load_pairs(args.probe)
    result = probe(pairs)
    print(f"{len(pairs)} pairs from {args.probe.name}\n")
    print("| kind | pairs scored | pairwise accuracy | swapped FAIL | faithful PASS |")
    print("|---|---|---|---|---|")
    for kind, f in result["figures"].items():
        print(f"| {kind} | {f['pairs']} | {f['pairwise']:.3f} | {f['swapped_fail']} | "
              f"{f['faithful_pass']} |")  # fmt: skip
    print("\nfaithfulness pairwise accuracy by category:")
    for category, accuracy in result["categories"].items():
        print(f"- {category}: {accuracy:.2f}")
    print("\nfaithfulness per pair (category, faithful score, swapped score, swapped decision):")
    for category, good, bad, decision in result["rows"]:
        print(f"- {category}: {good:.3f} / {bad:.3f} {decision}")
    if args.json:
        print(json.dumps(result["figures"]))


if __name__ == "__main__":
    main()
