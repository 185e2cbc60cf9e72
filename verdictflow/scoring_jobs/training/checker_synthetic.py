"""Document claims: synthetic (chunk, claim) pairs for the claim checker from real documents
(issue 43), many more than the human-labelled sets hold, made by documented rules.

The labelled sets give a few thousand pairs, most of them news summaries; a cross-encoder
fitted on them alone learns their shortcuts (HaluEval QA at 0.98 in-sample while held-out
claims stayed at chance). FactCC's lesson is that rule-made pairs from real documents teach
what support means at scale. For a sentence ``s`` of a document (its chunk: the one that
shares most of ``s``'s words, found by the same retrieval the checker runs at inference):

Supported (target 1):

- **verbatim**: ``s`` itself;
- **compressed**: ``s`` without its parentheses and trailing clause (", which ...",
  "; ..."), when at least six words are left: a claim that says less than the text;
- **fused**: ``s`` and the next sentence of its chunk joined as one claim.

Not supported (target 0):

- **relation**: roles, values, comparisons swapped or a negation dropped (the rules of
  :mod:`~verdictflow.scoring_jobs.training.relation_perturbations`);
- **entity**: one named entity, date or amount of ``s`` replaced by another of the same type,
  from the same document where it has one (hard) or from another document;
- **number**: a number of ``s`` changed;
- **negation added**: a "not" after the first auxiliary;
- **missing**: ``s`` against the best chunk of its document with ``s`` taken out;
- **foreign**: the sentence of another document that shares most words with the chunk
  (on topic, not said);
- **partly supported**: ``s`` fused with a foreign sentence (WiCE's "partially supported"
  is not supported).

Documents: SciFact's abstracts, the responses HaluEval's general set marks free of
hallucination, and the source documents of SummEval, QAGS and SummEdits; never a set the
checker is validated on. Deterministic: the same files, spaCy model and seed give the same
pairs in the same order.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from verdictflow.digests import file_digest
from verdictflow.evaluators.checker_chunks import (
    chunk_context,
    content_words,
    cut_claim,
    top_chunks,
)
from verdictflow.evaluators.relation_frames import doc_ents
from verdictflow.scoring_jobs.training.checker_pairs import Pair
from verdictflow.scoring_jobs.training.data_files import require
from verdictflow.scoring_jobs.training.relation_perturbations import (
    PERTURBATIONS,
    SENTENCE_CHARS,
)

logger = logging.getLogger(__name__)

#: Sentences used per document at most (documents stay balanced against each other).
SENTENCES_PER_DOCUMENT = 3
#: Candidate documents scanned for a foreign sentence (the most word-sharing one is taken).
FOREIGN_CANDIDATES = 24
SWAPPABLE = frozenset({
    "PERSON", "ORG", "GPE", "NORP", "LOC", "FAC", "EVENT", "WORK_OF_ART", "PRODUCT", "DATE",
    "TIME", "CARDINAL", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "LANGUAGE", "LAW",
})  # fmt: skip
_PARENS = re.compile(r"\s*\([^()]*\)")
_TRAILING = re.compile(r"(,\s+(which|while|whereas|although|though|but)\b|;\s).*$", re.I)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def documents(data: Path) -> tuple[list[str], dict[str, str]]:
    """The documents (see the module docstring), in file order, and the files read."""
    out: list[str] = []
    files: dict[str, str] = {}

    def lines(path: Path) -> Iterator[dict[str, Any]]:
        files[path.name] = file_digest(require(path))
        with path.open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)

    out += [str(r["text"]) for r in lines(data / "scifact_beir" / "corpus.jsonl")]
    out += [str(r["chatgpt_response"]) for r in lines(data / "halueval" / "general_data.json")
            if r["hallucination"] == "no"]  # fmt: skip
    out += [str(r["source"]) for r in lines(data / "summeval" / "summeval_docs.jsonl")]
    for name in ("mturk_cnndm.jsonl", "mturk_xsum.jsonl"):
        out += [str(r["article"]) for r in lines(data / "qags" / name)]
    for path in sorted((data / "summedits").glob("summedits_*.json")):
        files[path.name] = file_digest(path)
        out += [str(r["doc"]) for r in json.loads(path.read_text("utf-8"))]
    seen: set[str] = set()
    unique = []
    for text in out:
        text = text.strip()
        if len(text) >= 200 and text not in seen:
            seen.add(text)
            unique.append(text)
    return unique, files


def _compressed(text: str) -> str | None:
    short = _TRAILING.sub("", _PARENS.sub("", text)).strip().rstrip(",;:")
    if short == text or len(short.split()) < 6:
        return None
    return short if short.endswith((".", "!", "?")) else short + "."


def _entity_swap(sent: Any, pool: dict[str, list[str]], rng: random.Random) -> str | None:
    ents = [e for e in doc_ents(sent.doc) if sent.start <= e.start and e.end <= sent.end]
    ents = [e for e in ents if e.label_ in SWAPPABLE]
    rng.shuffle(ents)
    for ent in ents:
        own = {str(e.text) for e in doc_ents(sent.doc) if e.label_ == ent.label_} - {ent.text}
        inside = {e.text.lower() for e in ents}
        choices = sorted(t for t in own if t.lower() not in inside)
        if not choices:
            choices = [t for t in pool.get(ent.label_, []) if t.lower() not in inside]
        if not choices:
            continue
        new = str(rng.choice(choices))
        start, end = ent.start_char - sent.start_char, ent.end_char - sent.start_char
        return str(sent.text)[:start] + new + str(sent.text)[end:]
    return None


def _number_change(text: str, rng: random.Random) -> str | None:
    found = list(_NUMBER.finditer(text))
    if not found:
        return None
    match = rng.choice(found)
    value = match.group()
    if "." in value:
        whole, frac = value.split(".")
        new = f"{int(whole) + rng.randint(1, 9)}.{frac}"
    else:
        number = int(value)
        new = str(number * 2 if number > 20 and rng.random() < 0.5 else number + rng.randint(1, 9))
    return text[: match.start()] + new + text[match.end() :]


def _negation_add(sent: Any) -> str | None:
    for token in sent:
        if token.dep_ in ("aux", "auxpass") or (token.lemma_ == "be" and token.dep_ == "ROOT"):
            nxt = token.nbor(1) if token.i + 1 < len(token.doc) else None
            if nxt is not None and nxt.dep_ == "neg":
                return None
            at = token.idx + len(token.text) - sent.start_char
            return str(sent.text)[:at] + " not" + str(sent.text)[at:]
    return None


def _perturbed(sent: Any, claim: str, pool: dict[str, list[str]], rng: random.Random) -> str | None:
    """``claim`` changed by the first rule (in a seeded order) that applies to it."""
    rules: list[Callable[[], str | None]] = [
        *(lambda p=p: p(sent) for p in PERTURBATIONS.values()),
        lambda: _entity_swap(sent, pool, rng),
        lambda: _number_change(claim, rng),
        lambda: _negation_add(sent),
    ]
    rng.shuffle(rules)
    for rule in rules:
        changed = rule()
        if changed is not None and changed.strip() != claim:
            return changed.strip()
    return None


def _foreign(
    chunk: str, n: int, words_of: list[list[tuple[str, frozenset[str]]]], rng: random.Random
) -> str | None:
    """The sentence, among those of :data:`FOREIGN_CANDIDATES` random documents other than
    document ``n``, that shares most content words with ``chunk`` (``words_of``: each
    document's sentences with their content words, computed once)."""
    words = content_words(chunk)
    best, best_overlap = None, 0
    for _ in range(FOREIGN_CANDIDATES):
        other = rng.randrange(len(words_of) - 1)
        for candidate, candidate_words in words_of[other + (other >= n)]:
            overlap = len(words & candidate_words)
            if overlap > best_overlap:
                best, best_overlap = candidate, overlap
    return best


def document_claims(
    data: Path, nlp: Any, limit: int | None = None, seed: int = 13, n_process: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Pair], dict[str, str]]:  # fmt: skip
    """The document-claim pairs (module docstring) of up to ``limit`` documents."""
    texts, files = documents(data)
    rng = random.Random(seed)
    rng.shuffle(texts)
    texts = texts[:limit] if limit is not None else texts
    parsed = []
    pool: dict[str, list[str]] = {}
    for n, doc in enumerate(nlp.pipe(texts, batch_size=64, n_process=n_process)):
        low, high = SENTENCE_CHARS
        sentences = [s for s in doc.sents if low <= len(str(s.text).strip()) <= high]
        parsed.append((doc, sentences))
        for ent in doc_ents(doc):
            if ent.label_ in SWAPPABLE and len(pool.setdefault(ent.label_, [])) < 5000:
                pool[ent.label_].append(ent.text)
        if progress is not None:
            progress(n + 1, len(texts))
    for label in pool:
        pool[label] = sorted(set(pool[label]))
    words_of = [
        [(text, content_words(text)) for text in (str(s.text).strip() for s in sentences)]
        for _, sentences in parsed
    ]
    out: list[Pair] = []

    def add(kind: str, chunk: str, claim: str, target: float) -> None:
        out.append(Pair("documents", f"documents-{kind}", chunk, cut_claim(claim), target))

    for n, (doc, sentences) in enumerate(parsed):
        if len(sentences) < 3:
            continue
        text = str(doc.text)
        chunks = chunk_context(text)
        for at in sorted(rng.sample(range(len(sentences)), min(SENTENCES_PER_DOCUMENT,
                                                               len(sentences)))):  # fmt: skip
            sent = sentences[at]
            claim = str(sent.text).strip()
            chunk = chunks[top_chunks(claim, chunks, 1)[0]].text
            add("verbatim", chunk, claim, 1.0)
            if (short := _compressed(claim)) is not None:
                add("compressed", chunk, short, 1.0)
            following = [str(s.text).strip() for s in sentences[at + 1 : at + 2]]
            if following and following[0] in chunk:
                add("fused", chunk, f"{claim} {following[0]}", 1.0)
            changed = _perturbed(sent, claim, pool, rng)
            if changed is not None:
                add("perturbed", chunk, changed, 0.0)
            start, end = sent.start_char, sent.end_char
            without = (text[:start] + text[end:]).strip()
            rest = chunk_context(without)
            if rest:
                add("missing", rest[top_chunks(claim, rest, 1)[0]].text, claim, 0.0)
            if len(words_of) > 1 and (foreign := _foreign(chunk, n, words_of, rng)) is not None:
                add("foreign", chunk, foreign, 0.0)
                if rng.random() < 0.5:
                    add("partly", chunk, f"{claim} {foreign}", 0.0)
    counts: dict[str, int] = {}
    for pair in out:
        counts[pair.set_name] = counts.get(pair.set_name, 0) + 1
    logger.info("document claims from %d documents: %s", len(parsed), counts)
    return out, files
