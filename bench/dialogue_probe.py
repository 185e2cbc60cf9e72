"""The knowledge-grounded dialogue set (issue 31): conversational answers scored by the answer
verdicts, against hand labels.

``tests/data/dialogue_turns.jsonl``: 40 turns written by hand before any dialogue change, none
from ``../shared/data`` (so no training set shares their domain): a knowledge snippet, the
user's turn and the assistant's response, labelled faithful (1) or not (0), in the kinds a RAG
chat produces: plain and paraphrased answers, answers wrapped in a pleasantry ("Great
question! ... Hope that helps!"), answers ending in a question back to the user, hedged answers
("I believe ..."); and on the other side fabricated facts (also hedged ones), swapped relations,
claims about something the knowledge does not cover, and personal experiences an assistant
cannot have ("I played saxophone there for ten years"). Four more turns make no claim at all
("Which reef would you like to hear about?") and are expected to DEFER.

Figures per kind: ROC-AUC over the labelled turns (a DEFER scored as the worst), PASS rate of
faithful and FAIL rate of unfaithful turns, and each category's mean score; then what the
no-claim turns get.

    python bench/dialogue_probe.py [--json]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from sklearn.metrics import roc_auc_score

from verdictflow.evaluators.answer_batch import score_answers
from verdictflow.evaluators.policy import Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.scoring_setup import load_scoring

ROOT = Path(__file__).resolve().parents[1]
TURNS = ROOT / "tests/data/dialogue_turns.jsonl"
#: 16 more turns, written after the dialogue changes and never used to tune them.
HELD_OUT = TURNS.with_name("dialogue_turns_heldout.jsonl")
#: Kinds whose score is higher for a better answer (hallucination is flipped).
KINDS = ("faithfulness", "groundedness", "hallucination")


def load_turns(path: Path = TURNS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def probe(turns: list[dict[str, Any]]) -> dict[str, Any]:
    """Every turn's verdicts, and the figures per kind."""
    scoring = load_scoring(Policy(), "default")
    events = [
        AnswerEvent(id=f"t{n:02d}", query=t["user"], answer=t["response"],
                    contexts=[t["knowledge"]])
        for n, t in enumerate(turns)
    ]  # fmt: skip
    verdicts = [
        {v.kind.value: v for v in vs} for vs in score_answers(events, scoring.ctx, scoring.analyzer)
    ]
    figures: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        labels, scores = [], []
        passes = fails = positives = negatives = 0
        by_category: dict[str, list[float]] = defaultdict(list)
        no_claim: list[str] = []
        for turn, vs in zip(turns, verdicts, strict=True):
            v = vs[kind]
            if turn["label"] is None:
                no_claim.append(v.decision.value)
                continue
            score = 0.0 if v.score is None else v.score
            score = 1.0 - score if kind == "hallucination" and v.score is not None else score
            labels.append(turn["label"])
            scores.append(score)
            by_category[turn["category"]].append(score)
            if turn["label"]:
                positives += 1
                passes += v.decision.value == "PASS"
            else:
                negatives += 1
                fails += v.decision.value == "FAIL"
        figures[kind] = {
            "roc_auc": float(roc_auc_score(labels, scores)),
            "faithful_pass": f"{passes}/{positives}",
            "unfaithful_fail": f"{fails}/{negatives}",
            "categories": {c: sum(s) / len(s) for c, s in sorted(by_category.items())},
            "no_claim": no_claim,
        }
    rows = [
        (t["category"], t["label"], vs["faithfulness"].decision.value,
         vs["faithfulness"].score, t["response"])
        for t, vs in zip(turns, verdicts, strict=True)
    ]  # fmt: skip
    return {"figures": figures, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rows", action="store_true", help="print every turn's faithfulness")
    parser.add_argument(
        "--turns",
        type=Path,
        default=TURNS,
        help=f"turns file (held out: {HELD_OUT.relative_to(ROOT)})",
    )
    args = parser.parse_args()
    turns = load_turns(args.turns)
    result = probe(turns)
    print(f"{len(turns)} turns from {args.turns.name}\n")
    print("| kind | ROC-AUC | faithful PASS | unfaithful FAIL | no-claim turns |")
    print("|---|---|---|---|---|")
    for kind, f in result["figures"].items():
        print(f"| {kind} | {f['roc_auc']:.3f} | {f['faithful_pass']} | {f['unfaithful_fail']} "
              f"| {', '.join(f['no_claim'])} |")  # fmt: skip
    print("\nmean faithfulness by category:")
    for category, mean in result["figures"]["faithfulness"]["categories"].items():
        print(f"- {category}: {mean:.3f}")
    if args.rows:
        for category, label, decision, score, response in result["rows"]:
            shown = "-" if score is None else f"{score:.3f}"
            print(f"{category:<18} {label!s:<5} {decision:<6} {shown:<6} {response[:90]}")
    if args.json:
        print(json.dumps({k: {m: f[m] for m in ("roc_auc", "faithful_pass", "unfaithful_fail")}
                          for k, f in result["figures"].items()}))  # fmt: skip


if __name__ == "__main__":
    main()
