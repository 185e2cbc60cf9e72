"""The attribute ruler's matches by table (``verdictflow.attribute_rules``) against spaCy's
``Matcher`` (the reference), on texts of every data set in ``../shared/data``: the same match
list for every text (checked, not sampled: a difference exits non-zero), the time of each, and
raw ``nlp.pipe`` with the NLP tier's components with each.

    python bench/attribute_rules.py [--data ../shared/data] [--per-file 400]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from harness import machine

from verdictflow.attribute_rules import RuleMatches
from verdictflow.evaluators.answer_analysis import COMPONENTS
from verdictflow.nlp import _fresh

ROOT = Path(__file__).resolve().parent.parent


def data_texts(data: Path, per_file: int) -> dict[str, list[str]]:
    """Up to ``per_file`` distinct string fields of 20 characters or more from each JSON Lines
    file, in file order."""
    found: dict[str, list[str]] = {}
    for path in sorted(data.rglob("*.jsonl")):
        seen: dict[str, None] = {}
        with path.open() as lines:
            for line in lines:
                record = json.loads(line)
                for value in record.values() if isinstance(record, dict) else ():
                    if isinstance(value, str) and len(value) >= 20:
                        seen.setdefault(value[:20_000])
                if len(seen) >= per_file:
                    break
        found[str(path.relative_to(data))] = list(seen)[:per_file]
    return found


def pipe_rate(nlp: Any, texts: list[str]) -> float:
    list(nlp.pipe(texts[:64], batch_size=64))
    start = time.perf_counter()
    for _ in nlp.pipe(texts, batch_size=64):
        pass
    return len(texts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--per-file", type=int, default=400)
    args = parser.parse_args()
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f} at the start")
    nlp = _fresh(COMPONENTS)
    ruler = nlp.get_pipe("attribute_ruler")
    table = ruler.match
    assert isinstance(table, RuleMatches), "the loaded pipeline should match by table"
    spacy_match = type(ruler).match.__get__(ruler)
    total_texts, total_stock, total_table = 0, 0.0, 0.0
    found = data_texts(args.data, args.per_file)
    print(f"{'data set':<42}{'texts':>7}{'tokens':>9}{'Matcher ms':>12}{'table ms':>10}{'x':>6}")
    for name, texts in found.items():
        docs = list(nlp.pipe(texts, disable=["attribute_ruler", "lemmatizer", "ner"]))
        start = time.perf_counter()
        expected = [spacy_match(doc) for doc in docs]
        stock = time.perf_counter() - start
        start = time.perf_counter()
        got = [table(doc) for doc in docs]
        fast = time.perf_counter() - start
        for text, want, have in zip(texts, expected, got, strict=True):
            if want != have:
                sys.exit(f"{name}: the matches differ on {text[:200]!r}")
        tokens = sum(len(d) for d in docs)
        print(
            f"{name:<42}{len(texts):>7}{tokens:>9}{stock * 1e3:>12.0f}{fast * 1e3:>10.0f}"
            f"{stock / fast:>6.1f}"
        )
        total_texts += len(texts)
        total_stock += stock
        total_table += fast
    print(
        f"{'all, the same matches on every text':<42}{total_texts:>7}{'':>9}"
        f"{total_stock * 1e3:>12.0f}{total_table * 1e3:>10.0f}{total_stock / total_table:>6.1f}"
    )
    answers = [t for texts in found.values() for t in texts[:300] if len(t) < 600]
    with_table = pipe_rate(nlp, answers)
    ruler.match = spacy_match
    with_matcher = pipe_rate(nlp, answers)
    print(
        f"raw nlp.pipe ({','.join(COMPONENTS)}), {len(answers)} texts under 600 characters: "
        f"{with_matcher:.1f}/s with spaCy's Matcher, {with_table:.1f}/s by table "
        f"({with_table / with_matcher:.2f}x) | load {os.getloadavg()[0]:.2f} at the end"
    )


if __name__ == "__main__":
    main()
