"""What the relation signals cost (issue 31): the answers analyzer with and without them, on
answers and contexts shaped like production, next to the raw ``nlp.pipe`` of the same answers
measured in the same run.

The relation signals parse, per answer sentence that states a relation (a verb with its
roles, a comparison, a number or date), its best-supporting context sentence (one sentence,
at most 600 characters, cached by text): the cost follows the answer's length, never the
contexts'. Rows: HaluEval QA (short answers, one passage) and QAGS CNN/DM (multi-sentence
summaries of long articles), each analysed cold (empty caches) in batches of 64.

    python bench/relation_cost.py [--data ../shared/data] [--rows 600]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from verdictflow.evaluators.answer_analysis import AnswerAnalyzer
from verdictflow.lexicon import LazyLexicon
from verdictflow.nlp import load_pipeline
from verdictflow.scoring_jobs.training.faithfulness_data import halueval, qags

ROOT = Path(__file__).resolve().parents[1]


def timed_analysis(nlp: object, events: list, relations: bool) -> tuple[float, int]:
    analyzer = AnswerAnalyzer(nlp, lexicon=LazyLexicon(), relations=relations)
    began = time.perf_counter()
    pairs = 0
    for start in range(0, len(events), 64):
        for parsed in analyzer.analyze(events[start : start + 64]):
            pairs += len(parsed.relations)
    return time.perf_counter() - began, pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--rows", type=int, default=600)
    args = parser.parse_args()
    print(f"machine: {platform.node()} | {os.cpu_count()} cores | {platform.machine()} | "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    nlp = load_pipeline()
    timed_analysis(nlp, list(halueval(args.data).events[:64]), True)  # warm up both paths
    print(
        "| rows | answers | answer chars | nlp.pipe of answers | analyzer without relations "
        "| with relations | relation share | sentence pairs |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, labelled in (("HaluEval QA", halueval(args.data)),
                           ("QAGS CNN/DM", qags(args.data, "cnndm"))):  # fmt: skip
        events = list(labelled.events[: args.rows])
        chars = sum(len(e.answer) for e in events) / len(events)
        began = time.perf_counter()
        for _ in nlp.pipe([e.answer for e in events], batch_size=64):
            pass
        raw = time.perf_counter() - began
        without, _ = timed_analysis(nlp, events, False)
        with_relations, pairs = timed_analysis(nlp, events, True)
        extra = with_relations - without
        per = 1000 / len(events)
        print(f"| {name} | {len(events)} | {chars:.0f} | {raw * per:.2f} ms | "
              f"{without * per:.2f} ms | {with_relations * per:.2f} ms | "
              f"+{extra * per:.2f} ms/answer = {extra / raw:.0%} of the answers' parse | "
              f"{pairs} |")  # fmt: skip


if __name__ == "__main__":
    main()
