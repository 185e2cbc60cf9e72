"""The (chunk, claim) pairs ``verdictflow train-checker`` fits on (issue 43).

From the human-labelled sets the faithfulness model already reads (``faithfulness_data``:
SummEdits, HaluEval QA, QAGS, SummEval; for SummEdits its ``evaluation`` split only, the
others have no split) and the relation perturbations (FactCC-style synthetic pairs from real
documents: verbatim sentences supported, swapped roles, values, comparisons and removed
negations not), plus two synthetic families of our own:

- **missing sentence**: a sentence of a real document (SciFact abstracts) as the claim, against
  the best chunk of that document with the sentence taken out: a claim that needs a sentence
  the chunk does not have (label 0), beside the same sentence with it left in (label 1);
- **document claims** (:mod:`~verdictflow.scoring_jobs.training.checker_synthetic`): ~15 rule-
  made pairs from each of 9,142 real documents (verbatim, compressed and fused sentences
  supported; perturbed, swapped, missing, foreign and partly supported ones not).

Each event's answer is the claim (cut to :data:`~verdictflow.evaluators.checker_chunks.
CLAIM_WORDS` words); its context is cut into chunks and the claim paired with the one chunk
that shares most of its words (retrieval, never the label), so long documents train the way
they are checked. Targets are the sets' own in [0, 1] (QAGS and SummEval are shares, not
bits). Each source is capped (:data:`CAPS`, scaled by ``cap_scale``; None: no caps, for a
GPU) and sampled with a fixed seed, so the same files give the same pairs.

Held out: ``aggrefact_dev`` and ``begin_dev`` are never trained on by default; they are what
the checker is validated on. ``--sets`` may name some of them (:data:`HELD_OUT_SOURCES`) to
train on them and validate on the rest.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from verdictflow.digests import file_digest
from verdictflow.evaluators.checker_chunks import (
    chunk_context,
    cut_claim,
    sentence_spans,
    top_chunks,
)
from verdictflow.scoring_jobs.training.checker_pairs import Pair
from verdictflow.scoring_jobs.training.faithfulness_data import LOADERS
from verdictflow.scoring_jobs.training.labelled_sets import LabelledSet, require

#: Pairs kept per source at most (sampled with the seed): the sources stay balanced and an
#: epoch fits a 2-core machine.
CAPS: dict[str, int] = {
    "summedits": 1200,
    # HaluEval QA is learnt from shortcuts (0.98 in-sample ROC-AUC after one epoch while the
    # held-out sets stayed at chance): fewer of its pairs, more of the rest
    "halueval": 600,
    "qags": 474,
    "summeval": 600,
    "perturbations": 1200,
    "missing": 800,
    "documents": 4000,
    "aggrefact": 2200,
    "begin": 1300,
}
DEFAULT_SETS = (
    "summedits-news", "summedits-podcast", "summedits-samsum", "summedits-scitldr",
    "halueval-qa", "qags-cnndm", "qags-xsum", "summeval", "perturbations-relations",
    "missing-sentences", "document-claims",
)  # fmt: skip
#: The held-out sets (:mod:`checker_sets`), which ``--sets`` may name to train on some of them
#: and validate on the rest (leave one set out).
HELD_OUT_SOURCES = {"wice": "aggrefact", "factcheckgpt": "aggrefact", "begin-wow": "begin",
                    "begin-cmu": "begin", "begin-tc": "begin"}  # fmt: skip


def pairs_of(labelled: LabelledSet) -> list[Pair]:
    out = []
    for event, target, split in zip(
        labelled.events, labelled.targets, labelled.splits, strict=True
    ):
        if split == "test":  # SummEdits' test split stays out: dev splits only
            continue
        context = event.context_passages[0].text if event.context_passages else ""
        chunks = chunk_context(context)
        if not chunks:
            continue
        claim = cut_claim(event.answer)
        best = chunks[top_chunks(claim, chunks, 1)[0]]
        out.append(Pair(labelled.source, labelled.name, best.text, claim, float(target)))
    return out


def missing_sentences(
    data: Path, limit: int = 400, seed: int = 13
) -> tuple[list[Pair], dict[str, str]]:
    """Claims that need a sentence the chunk lacks (see the module doc), and the positives."""
    path = require(data / "scifact_beir" / "corpus.jsonl")
    rng = random.Random(seed)
    docs = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    rng.shuffle(docs)
    out: list[Pair] = []
    for doc in docs:
        text = str(doc.get("text", ""))
        spans = sentence_spans(text)
        if len(spans) < 4:
            continue
        start, end = spans[rng.randrange(1, len(spans))]
        claim = text[start:end].strip()
        if len(claim.split()) < 8:
            continue
        without = (text[:start] + text[end:]).strip()
        for context, target in ((text, 1.0), (without, 0.0)):
            chunks = chunk_context(context)
            best = chunks[top_chunks(claim, chunks, 1)[0]]
            out.append(Pair("missing", "missing-sentences", best.text, cut_claim(claim), target))
        if len(out) >= 2 * limit:
            break
    return out, {path.name: file_digest(path)}


def held_out_pairs(data: Path, name: str) -> tuple[list[Pair], dict[str, str]]:
    """A held-out set's rows as training pairs (each claim with its best chunk)."""
    from verdictflow.scoring_jobs.training.checker_sets import HELD_OUT, held_out_file

    out = []
    for row in HELD_OUT[name](data):
        chunks = chunk_context(row.doc)
        if not chunks:
            continue
        claim = cut_claim(row.claim)
        best = chunks[top_chunks(claim, chunks, 1)[0]]
        out.append(Pair(HELD_OUT_SOURCES[name], name, best.text, claim, float(row.label)))
    path = held_out_file(data, name)
    return out, {path.name: file_digest(path)}


def load_pairs(
    data: Path, names: tuple[str, ...] = DEFAULT_SETS, seed: int = 13,
    cap_scale: float | None = 1.0, n_process: int = 1,
) -> tuple[list[Pair], dict[str, str]]:  # fmt: skip
    """Every pair of the named sets, each source capped (:data:`CAPS` times ``cap_scale``;
    None: uncapped), in a seeded order; the files read."""
    by_source: dict[str, list[Pair]] = {}
    files: dict[str, str] = {}

    def cap(source: str) -> int | None:
        if cap_scale is None or source not in CAPS:
            return None
        return max(1, int(CAPS[source] * cap_scale))

    for name in names:
        if name == "missing-sentences":
            wanted = cap("missing")
            pairs, read = missing_sentences(data, wanted // 2 if wanted else 10**9, seed)
        elif name == "document-claims":
            from verdictflow.nlp import load_pipeline
            from verdictflow.scoring_jobs.training.checker_synthetic import document_claims

            wanted = cap("documents")
            # ~15 pairs a document: parse 2.5x what the cap keeps, so it samples across them
            limit = None if wanted is None else max(1, wanted // 6)
            pairs, read = document_claims(data, load_pipeline(), limit, seed, n_process)
        elif name in HELD_OUT_SOURCES:
            pairs, read = held_out_pairs(data, name)
        else:
            labelled = LOADERS[name](data)
            pairs, read = pairs_of(labelled), labelled.files
        files.update(read)
        for pair in pairs:
            by_source.setdefault(pair.source, []).append(pair)
    rng = random.Random(seed)
    out: list[Pair] = []
    for source in sorted(by_source):
        pairs = by_source[source]
        rng.shuffle(pairs)
        out += pairs[: cap(source)]
    rng.shuffle(out)
    return out, files
