"""The bytes of the lexical (and a sample of the NLP) tier's outputs on real and generated
answers, run as ``python -m tests.support.scorer_bytes`` by the compiled-scorers test: once
with the compiled lexical scorers, once as pure Python, each in a process of its own (a process
imports a module only once).

Prints one JSON line: the SHA-256 of every output's bytes per tier, the counts, and the file
each compiled module was loaded from.
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys

from tests.support.paths import SHARED_DATA
from verdictflow import compiled_scorers
from verdictflow.evaluators.kinds import Tier
from verdictflow.evaluators.policy import Policy
from verdictflow.pipelines.answers import answer_outputs
from verdictflow.samples.traffic import generate
from verdictflow.scoring_setup import Scoring, load_scoring
from verdictflow.streams.records import Record

#: Answers taken from each labelled set: 300 from HaluEval (question and knowledge), 300 from
#: BEGIN's three dialogue sets, 150 from LLM-AggreFact's two (claims on ~4 KB documents).
PER_SET = 300
#: Answers the NLP tier scores (a parse each: ~30 ms on a 2-core VM).
NLP_ANSWERS = 48


def labelled_events() -> list[dict[str, object]]:
    """Questions, dialogues and claims with their contexts, from ../shared/data (when there)."""
    events: list[dict[str, object]] = []
    halueval = SHARED_DATA / "halueval" / "qa_data_first1000.json"
    if halueval.is_file():
        with halueval.open() as rows:
            for i, line in zip(range(PER_SET // 2), rows, strict=False):
                row = json.loads(line)
                for key in ("right_answer", "hallucinated_answer"):
                    events.append(
                        {
                            "id": f"halueval-{i}-{key}",
                            "query": row["question"],
                            "answer": row[key],
                            "contexts": [row["knowledge"]],
                        }
                    )
    csv.field_size_limit(10**8)
    for path in sorted((SHARED_DATA / "begin_dev").glob("*.tsv")):
        with path.open() as rows:
            dialogue = csv.DictReader(rows, delimiter="\t")
            for i, row in zip(range(PER_SET // 3), dialogue, strict=False):
                events.append(
                    {
                        "id": f"{path.stem}-{i}",
                        "query": row["message"],
                        "answer": row["response"],
                        "contexts": [row["knowledge"]],
                    }
                )
    for path in sorted((SHARED_DATA / "aggrefact_dev").glob("*.jsonl")):
        with path.open() as rows:
            for i, line in zip(range(PER_SET // 4), rows, strict=False):
                row = json.loads(line)
                claim = str(row.get("claim") or "")
                events.append(
                    {
                        "id": f"{path.stem}-{i}",
                        "query": claim[:80],
                        "answer": claim,
                        "contexts": [str(row.get("doc") or "")],
                    }
                )
    return events


#: Answers where a compiled string operation could part from CPython's: Unicode's context
#: rule for a capital sigma at a word's end ("ΟΔΟΣ" lowercases to "οδος"), one-to-many case
#: mappings ("İ", "ß", "ﬁ"), titlecase and full-width letters, scripts without case.
EDGE_EVENTS = [
    {
        "id": f"edge-{i}",
        "query": query,
        "answer": answer,
        "contexts": [context],
    }
    for i, (query, answer, context) in enumerate(
        [
            (
                "ΠΟΥ ΕΙΝΑΙ Ο ΣΙΣΥΦΟΣ;",
                "Ο ΣΊΣΥΦΟΣ ΕΊΝΑΙ ΣΤΗΝ ΚΌΡΙΝΘΟ.",
                "Ο Σίσυφος ήταν βασιλιάς της Κορίνθου.",
            ),
            (
                "Where is İstanbul?",
                "İSTANBUL lies on the Bosphorus, STRASSE ﬁle.",
                "Istanbul, straße, file.",
            ),
            (
                "Ǆemal ＦＵＬＬ",
                "ǄEMAL wrote ＦＵＬＬ width text: ΟΔΟΣ ΟΔΟΣ.",
                "Džemal, full width: οδος.",
            ),
            ("北京在哪里？", "北京是中国的首都。", "北京是中华人民共和国的首都。"),
        ]
    )
]


def labelled_texts() -> list[str]:
    """Every question, answer and context of :data:`EDGE_EVENTS` and :func:`labelled_events`:
    real text for tests that hold a rewritten piece equal to the library it replaces."""
    return [
        str(text)
        for event in EDGE_EVENTS + labelled_events()
        for text in (event["query"], event["answer"], *event["contexts"])
    ]


def digest(records: list[Record], tier: Tier, scoring: Scoring) -> tuple[str, int]:
    sha = hashlib.sha256()
    count = 0
    for start in range(0, len(records), 64):
        batch = records[start : start + 64]
        for outputs in answer_outputs(
            batch, scoring.ctx, scoring.analyzer, max_bytes=1 << 22, tier=tier
        ):
            for topic, key, value in outputs:
                sha.update(f"{topic}\0{key!r}\0".encode() + value + b"\0")
                count += 1
    return sha.hexdigest(), count


def main() -> None:
    real = [json.dumps(e).encode() for e in EDGE_EVENTS + labelled_events()]
    generated = generate(600, seed=11, malformed_every=37, grouped_share=0.1, inline_share=0.2)
    lines = real + list(generated.lines)
    records = [Record("answers", 0, i, None, line, 1.0e9 + i) for i, line in enumerate(lines)]
    scoring = load_scoring(Policy(), "default")
    lexical, n_lexical = digest(records, Tier.LEXICAL, scoring)
    nlp, n_nlp = digest(records[:NLP_ANSWERS], Tier.NLP, scoring)
    files = {m: sys.modules[m].__file__ for m in compiled_scorers.COMPILED_MODULES}
    print(
        json.dumps(
            {
                "lexical": lexical,
                "lexical_outputs": n_lexical,
                "nlp": nlp,
                "nlp_outputs": n_nlp,
                "real_answers": len(real),
                "files": files,
            }
        )
    )


if __name__ == "__main__":
    main()
